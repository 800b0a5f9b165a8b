#!/bin/sh
# Regenerates the test certificates (EC P-256, valid for 100 years): a CA, a server
# certificate for localhost and 127.0.0.1, a second one (certificate reload tests) and a
# client certificate, all signed by the CA. Used by the Rust unit tests and the fuzz target;
# the Python tests make their own at run time.
set -eu
cd "$(dirname "$0")"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
key ca.key
openssl req -x509 -new -key ca.key -days 36500 -subj "/CN=larder test CA" -out ca.crt
for name in server server2 client; do
    key "$name.key"
    openssl req -new -key "$name.key" -subj "/CN=larder $name" -out "$name.csr"
    if [ "$name" = client ]; then
        ext="extendedKeyUsage=clientAuth"
    else
        ext="subjectAltName=DNS:localhost,IP:127.0.0.1
extendedKeyUsage=serverAuth"
    fi
    printf '%s\n' "$ext" > "$name.ext"
    openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 36500 \
        -extfile "$name.ext" -out "$name.crt" 2>/dev/null
    rm "$name.csr" "$name.ext"
done
rm -f ca.srl
