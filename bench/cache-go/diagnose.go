package main

// static void larder_bench_nop(void) {}
import "C"

import (
	"fmt"
	"time"

	larder "github.com/larder-db/larder/bindings/go"
)

// diagnose times, over the same shuffled keys, what a single-key lookup is made of: reading
// the key in Go, the same plus an empty cgo call, and Contains (one real lookup, no value, in
// Go over the mapping). The gap between the first two is the cgo transition plus the cache
// misses it serialises: a cgo call is a full memory barrier, so the key's misses can no longer
// overlap with the neighbouring iterations' as they do in a plain Go loop, which is why
// lookups do not make one.
func diagnose(c *larder.Cache, keys []string, order []uint32) {
	perKey := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(len(order)) }
	sum := 0
	collect()
	c0 := startClock()
	for _, i := range order {
		k := keys[i]
		sum += int(k[0]) + int(k[len(k)-1])
	}
	_, touch := c0.stop()
	collect()
	c0 = startClock()
	for _, i := range order {
		k := keys[i]
		sum += int(k[0]) + int(k[len(k)-1])
		C.larder_bench_nop()
	}
	_, touchNop := c0.stop()
	collect()
	c0 = startClock()
	for _, i := range order {
		ok, err := c.Contains(keys[i])
		if err != nil || !ok {
			panic(fmt.Sprintf("Contains(%s) = %v, %v", keys[i], ok, err))
		}
		sum++
	}
	_, contains := c0.stop()
	fmt.Printf("\nSingle-key lookup anatomy (ns per key, thread CPU time; checksum %d):\n\n", sum)
	fmt.Println("| loop over the shuffled keys | ns |")
	fmt.Println("|---|---:|")
	fmt.Printf("| read the key's first and last byte (Go only) | %.1f |\n", perKey(touch))
	fmt.Printf("| the same plus an empty cgo call | %.1f |\n", perKey(touchNop))
	fmt.Printf("| Cache.Contains (a full lookup in Go, no cgo call) | %.1f |\n", perKey(contains))
}
