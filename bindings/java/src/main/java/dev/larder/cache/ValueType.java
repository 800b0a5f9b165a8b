package dev.larder.cache;

/**
 * The type of a stored value, with the Java type each getter returns for it. The names and tags
 * are those of the file format ({@code docs/cache-format.md}) and of the C header.
 */
public enum ValueType {
    /** Arbitrary bytes: {@code byte[]}. */
    BYTES(1, "bytes"),
    /** UTF-8 text: {@link String}. */
    STR(2, "str"),
    /** Signed 64-bit integer: {@code long}. */
    I64(3, "i64"),
    /** 64-bit float: {@code double}. */
    F64(4, "f64"),
    /** Boolean: {@code boolean}. */
    BOOL(5, "bool"),
    /** List of 32-bit floats: {@code float[]} or a {@link java.nio.FloatBuffer} over the file. */
    F32_LIST(6, "list<f32>"),
    /** List of 64-bit floats: {@code double[]} or a {@link java.nio.DoubleBuffer} over the file. */
    F64_LIST(7, "list<f64>"),
    /** List of strings: {@code List<String>}. */
    STR_LIST(8, "list<str>");

    private static final ValueType[] BY_TAG = new ValueType[9];

    static {
        for (ValueType t : values()) {
            BY_TAG[t.tag] = t;
        }
    }

    private final int tag;
    private final String formatName;

    ValueType(int tag, String formatName) {
        this.tag = tag;
        this.formatName = formatName;
    }

    /**
     * The tag byte that marks this type in the file.
     *
     * @return 1 to 8
     */
    public int tag() {
        return tag;
    }

    /**
     * The name the format documentation, the CLI and error messages use ({@code "list<f32>"}).
     *
     * @return the format's name for the type
     */
    public String formatName() {
        return formatName;
    }

    /**
     * The type with a given tag.
     *
     * @param tag a tag byte
     * @return the type
     * @throws IllegalArgumentException if no type has that tag
     */
    public static ValueType fromTag(int tag) {
        if (tag < 1 || tag >= BY_TAG.length) {
            throw new IllegalArgumentException("no value type has tag " + tag);
        }
        return BY_TAG[tag];
    }
}
