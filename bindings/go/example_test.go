package larder_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	larder "github.com/larder-db/larder/bindings/go"
)

// The README example. TestReadmeExample checks that README.md shows exactly this body.
func Example() {
	dir, err := os.MkdirTemp("", "larder-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "features.lcache")

	// Build once. Records stream to a temporary file, renamed into place by Finish.
	b, err := larder.NewBuilder(path, &larder.BuilderOptions{Name: "features", Dedup: true})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Abort() // a no-op after Finish
	for _, err := range []error{
		b.InsertFloat64("user:42:score", 0.93),
		b.InsertFloat32s("user:42:embedding", []float32{0.1, 0.2, 0.3}),
		b.InsertStrings("user:42:tags", []string{"new", "mobile"}),
	} {
		if err != nil {
			log.Fatal(err)
		}
	}
	stats, err := b.Finish()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("keys:", stats.KeyCount)

	// Open: mmap, O(1). One Cache serves any number of goroutines without locks.
	c, err := larder.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	score, ok, err := c.GetFloat64("user:42:score")
	fmt.Println(score, ok, err)
	emb, _, _ := c.GetFloat32sUnsafe("user:42:embedding") // aliases the mapping until Close
	fmt.Println(emb)
	tags, _, _ := c.GetStrings("user:42:tags")
	fmt.Println(tags)
	_, ok, err = c.GetInt64("user:42:score")
	fmt.Println(ok, errors.Is(err, larder.ErrTypeMismatch), err)
	_, ok, err = c.GetInt64("user:43:score")
	fmt.Println(ok, err)
	// Output:
	// keys: 3
	// 0.93 true <nil>
	// [0.1 0.2 0.3]
	// [new mobile]
	// false true larder get "user:42:score": type mismatch: asked for i64, key holds f64
	// false <nil>
}

// Many keys in one cgo call: on a large file with keys in random order this costs about half
// as much per key as separate lookups.
func ExampleCache_GetBatch() {
	c, err := larder.Open("../../testdata/cache/v1-all-types.lcache")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	var batch larder.Batch // reusable: Reset keeps its buffers
	for _, key := range []string{"str", "i64", "absent"} {
		batch.Add(key)
	}
	if err := c.GetBatch(&batch); err != nil {
		log.Fatal(err)
	}
	s, ok, err := batch.GetString(0)
	fmt.Println(s, ok, err)
	i, ok, err := batch.GetInt64(1)
	fmt.Println(i, ok, err)
	_, ok, err = batch.GetInt64(2)
	fmt.Println(ok, err)
	// Output:
	// héllo wörld true <nil>
	// -9007199254740993 true <nil>
	// false <nil>
}

// Follow a live path: publish a new file by building it onto the path (the Builder writes
// beside it and renames), then Refresh. A Cache taken before the swap keeps its file.
func ExampleSwappingCache() {
	dir, err := os.MkdirTemp("", "larder-swap-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	live := filepath.Join(dir, "prices.lcache")
	publish := func(price float64) {
		b, err := larder.NewBuilder(live, nil)
		if err != nil {
			log.Fatal(err)
		}
		defer b.Abort()
		if err := b.InsertFloat64("apple", price); err != nil {
			log.Fatal(err)
		}
		if _, err := b.Finish(); err != nil {
			log.Fatal(err)
		}
	}
	publish(1.25)

	prices, err := larder.WatchPath(live) // or larder.WatchPointer("CURRENT")
	if err != nil {
		log.Fatal(err)
	}
	defer prices.Close()
	old, _ := prices.Current() // close each Current when done with it
	defer old.Close()

	publish(1.40)
	changed, err := prices.Refresh() // call from a time.Ticker, say
	fmt.Println(changed, err)
	now, _ := prices.Current()
	defer now.Close()
	p, _, _ := now.GetFloat64("apple")
	q, _, _ := old.GetFloat64("apple")
	fmt.Println(p, q)
	changed, err = prices.Refresh()
	fmt.Println(changed, err)
	// Output:
	// true <nil>
	// 1.4 1.25
	// false <nil>
}
