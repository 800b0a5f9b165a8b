// Command cache-go is AxonCache's benchmark for the Go binding, side by side with a Go map:
// insert N keys `key_<i>` -> `val_<i>`, then look every key up in shuffled order; repeat R
// times and print mean and standard deviation of ns per insert and per lookup as a markdown
// table.
//
// Usage (from bench/cache-go, after bindings/go/test.sh has placed the static library):
//
//	go run . [-keys N] [-runs R] [-dir DIR] [-only larder,map] [-batch N] [-diagnose]
//
// Method, as bench/cache-rust's:
//   - Keys and values are generated before timing. The lookup order is the same fixed-seed
//     xorshift64* Fisher-Yates permutation as the Rust benchmark's.
//   - Each lookup reads the value (its length and whether its last byte is 0xff go into a
//     checked sum).
//   - "insert" for larder is the whole build: NewBuilder, InsertString per key, Finish (index,
//     header, fsync, rename). For the map it is `m[k] = v` into `make(map[string]string)` with
//     no size hint; the map shares the pre-built strings (Go strings are immutable, so no copy
//     is needed), where the Rust maps clone them.
//   - Runs are interleaved (run 1 of every store, then run 2, ...). Each run builds the cache
//     file and the map, then times every lookup pass back to back (the larder variants on the
//     same file) in an order that rotates per run, so that ratios compare passes taken seconds
//     apart and no pass always pays the first touch of the mapping. runtime.GC() runs untimed
//     before every timed phase.
//   - After opening the file, an untimed Verify reads it all, so every lookup pass runs on a
//     fully mapped file (page cache and page tables warm), as the map runs on built memory.
//   - Times are the CPU time of the benchmarking thread (CLOCK_THREAD_CPUTIME_ID, the goroutine
//     locked to its thread): the 2-core machine is shared. Go's background GC workers run on
//     other threads and are not counted there, so wall times are printed too.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
	"unsafe"

	larder "github.com/larder-db/larder/bindings/go"
)

// threadCPU returns the CPU time of the calling OS thread.
func threadCPU() time.Duration {
	const clockThreadCPUTimeID = 3
	var ts syscall.Timespec
	_, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID,
		uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		panic(errno)
	}
	return time.Duration(ts.Nano())
}

type clock struct {
	wall time.Time
	cpu  time.Duration
}

func startClock() clock { return clock{wall: time.Now(), cpu: threadCPU()} }

// stop returns the elapsed (wall, cpu) time.
func (c clock) stop() (time.Duration, time.Duration) {
	return time.Since(c.wall), threadCPU() - c.cpu
}

// sample is one measurement: ns per key on both clocks.
type sample struct{ cpu, wall float64 }

// row accumulates one table row over the runs.
type row struct {
	name      string
	lookups   []sample
	inserts   []sample // empty for a row that shares another row's build
	buildMS   []float64
	fileBytes uint64
	note      string
}

// shuffled is bench/cache-rust's fixed-seed Fisher-Yates shuffle (xorshift64*).
func shuffled(n int) []uint32 {
	order := make([]uint32, n)
	for i := range order {
		order[i] = uint32(i)
	}
	s := uint64(0x9E37_79B9_7F4A_7C15)
	for i := n - 1; i >= 1; i-- {
		s ^= s >> 12
		s ^= s << 25
		s ^= s >> 27
		j := (s * 0x2545_F491_4F6C_DD1D) % uint64(i+1)
		order[i], order[j] = order[j], order[i]
	}
	return order
}

func useValue(v string) int {
	n := len(v)
	if n > 0 && v[n-1] == 0xff {
		n++
	}
	return n
}

func useBytes(v []byte) int {
	n := len(v)
	if n > 0 && v[n-1] == 0xff {
		n++
	}
	return n
}

// lookupAll reads every key in order and returns the checked sum of the values.
type lookupAll func(c *larder.Cache, keys []string, order []uint32) (int, error)

// lookupVariant is one way of reading every key from the cache.
type lookupVariant struct {
	name string
	run  lookupAll
}

// batchSize is the number of keys per Cache.GetBatch call (-batch).
var batchSize = 256

// diagnosis adds the single-key lookup anatomy after the table (-diagnose).
var diagnosis = false

var variants = []lookupVariant{
	{"larder GetStringUnsafe (zero-copy)", lookupStringUnsafe},
	{"larder GetString (copy)", lookupString},
	{"larder GetBytes (copy)", lookupBytes},
	{"larder Get (Value, copy)", lookupValue},
	{"larder Batch GetStringUnsafe (zero-copy)", lookupBatch(true)},
	{"larder Batch GetString (copy)", lookupBatch(false)},
}

// lookupBatch looks the keys up batchSize at a time with Cache.GetBatch.
func lookupBatch(zeroCopy bool) lookupAll {
	return func(c *larder.Cache, keys []string, order []uint32) (int, error) {
		var b larder.Batch
		total := 0
		for base := 0; base < len(order); base += batchSize {
			part := order[base:min(base+batchSize, len(order))]
			b.Reset()
			for _, i := range part {
				b.Add(keys[i])
			}
			if err := c.GetBatch(&b); err != nil {
				return 0, err
			}
			for j := range part {
				var v string
				var err error
				if zeroCopy {
					v, _, err = b.GetStringUnsafe(j)
				} else {
					v, _, err = b.GetString(j)
				}
				if err != nil {
					return 0, err
				}
				total += useValue(v)
			}
		}
		return total, nil
	}
}

func lookupStringUnsafe(c *larder.Cache, keys []string, order []uint32) (int, error) {
	total := 0
	for _, i := range order {
		v, _, err := c.GetStringUnsafe(keys[i])
		if err != nil {
			return 0, err
		}
		total += useValue(v)
	}
	return total, nil
}

func lookupString(c *larder.Cache, keys []string, order []uint32) (int, error) {
	total := 0
	for _, i := range order {
		v, _, err := c.GetString(keys[i])
		if err != nil {
			return 0, err
		}
		total += useValue(v)
	}
	return total, nil
}

func lookupBytes(c *larder.Cache, keys []string, order []uint32) (int, error) {
	total := 0
	for _, i := range order {
		v, _, err := c.GetBytes(keys[i])
		if err != nil {
			return 0, err
		}
		total += useBytes(v)
	}
	return total, nil
}

func lookupValue(c *larder.Cache, keys []string, order []uint32) (int, error) {
	total := 0
	for _, i := range order {
		v, _, err := c.Get(keys[i])
		if err != nil {
			return 0, err
		}
		total += useValue(v.String())
	}
	return total, nil
}

const mapName = "Go map[string]string"

func main() {
	keysN := flag.Int("keys", 1_000_000, "number of keys")
	runs := flag.Int("runs", 3, "runs per store")
	dir := flag.String("dir", filepath.Join(os.TempDir(), "larder-cache-bench-go"),
		"directory for the cache file")
	only := flag.String("only", "",
		"comma-separated substrings of store names to run (default all)")
	flag.IntVar(&batchSize, "batch", batchSize, "keys per Cache.GetBatch call in the Batch rows")
	flag.BoolVar(&diagnosis, "diagnose", false,
		"after the table, time the parts of a single-key lookup (needs a larder row)")
	flag.Parse()
	if batchSize < 1 {
		fmt.Fprintln(os.Stderr, "error: -batch must be at least 1")
		os.Exit(2)
	}
	if err := run(*keysN, *runs, *dir, *only); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(n, runs int, dir, only string) error {
	runtime.LockOSThread() // thread CPU time must be this goroutine's
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	wanted := func(name string) bool {
		if only == "" {
			return true
		}
		for _, w := range strings.Split(only, ",") {
			if w != "" && strings.Contains(strings.ToLower(name), strings.ToLower(w)) {
				return true
			}
		}
		return false
	}
	keys := make([]string, n)
	vals := make([]string, n)
	raw, expected := 0, 0
	for i := range n {
		keys[i] = fmt.Sprintf("key_%d", i)
		vals[i] = fmt.Sprintf("val_%d", i)
		raw += len(keys[i]) + len(vals[i])
		expected += useValue(vals[i])
	}
	order := shuffled(n)

	var rows []*row
	var larderRows []*row
	var active []lookupVariant
	for _, v := range variants {
		if wanted(v.name) {
			r := &row{name: v.name}
			if len(larderRows) > 0 {
				r.note = "same file"
			}
			larderRows = append(larderRows, r)
			active = append(active, v)
			rows = append(rows, r)
		}
	}
	var mapRow *row
	if wanted(mapName) {
		mapRow = &row{name: mapName}
		rows = append(rows, mapRow)
	}
	path := filepath.Join(dir, "bench.lcache")
	perKey := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(n) }

	// Each run builds every store, then times their lookups back to back, in an order that
	// rotates per run, so that the ratios compare passes taken within seconds of each other.
	type pass struct {
		row    *row
		lookup func() (int, error)
	}
	for r := range runs {
		var passes []pass
		var c *larder.Cache
		if len(active) > 0 {
			fmt.Fprintf(os.Stderr, "run %d: larder build ...\n", r+1)
			collect()
			c0 := startClock()
			b, err := larder.NewBuilder(path, &larder.BuilderOptions{Name: "bench"})
			if err != nil {
				return err
			}
			for i := range keys {
				if err := b.InsertString(keys[i], vals[i]); err != nil {
					return err
				}
			}
			stats, err := b.Finish()
			if err != nil {
				return err
			}
			wall, cpu := c0.stop()
			first := larderRows[0]
			first.inserts = append(first.inserts, sample{perKey(cpu), perKey(wall)})
			first.buildMS = append(first.buildMS, float64(wall.Microseconds())/1e3)
			first.fileBytes = stats.FileBytes
			fmt.Fprintf(os.Stderr, "  insert %.1f ns cpu (%.1f wall)\n", perKey(cpu), perKey(wall))
			if c, err = larder.Open(path); err != nil {
				return err
			}
			// Untimed: Verify reads the whole file through the mapping, so that every pass
			// finds it mapped (as the map it is compared with is in memory), instead of the
			// first pass of a run paying ~7,000 page faults for the others.
			if err := c.Verify(); err != nil {
				return err
			}
			for k, v := range active {
				passes = append(passes, pass{larderRows[k], func() (int, error) {
					return v.run(c, keys, order)
				}})
			}
		}
		var m map[string]string
		if mapRow != nil {
			fmt.Fprintf(os.Stderr, "run %d: %s build ...\n", r+1, mapName)
			collect()
			c0 := startClock()
			m = make(map[string]string)
			for i := range keys {
				m[keys[i]] = vals[i]
			}
			wall, cpu := c0.stop()
			mapRow.inserts = append(mapRow.inserts, sample{perKey(cpu), perKey(wall)})
			mapRow.buildMS = append(mapRow.buildMS, float64(wall.Microseconds())/1e3)
			fmt.Fprintf(os.Stderr, "  insert %.1f ns cpu (%.1f wall)\n", perKey(cpu), perKey(wall))
			passes = append(passes, pass{mapRow, func() (int, error) {
				total := 0
				for _, i := range order {
					total += useValue(m[keys[i]])
				}
				return total, nil
			}})
		}
		for k := range passes {
			p := passes[(k+r)%len(passes)]
			collect()
			c0 := startClock()
			total, err := p.lookup()
			wall, cpu := c0.stop()
			if err != nil {
				return err
			}
			if total != expected {
				return fmt.Errorf("%s returned wrong values (sum %d, want %d)",
					p.row.name, total, expected)
			}
			p.row.lookups = append(p.row.lookups, sample{perKey(cpu), perKey(wall)})
			fmt.Fprintf(os.Stderr, "  %s: lookup %.1f ns cpu (%.1f wall)\n",
				p.row.name, perKey(cpu), perKey(wall))
		}
		if c != nil && diagnosis && r == runs-1 {
			defer func(c *larder.Cache) { // after the table
				diagnose(c, keys, order)
				c.Close()
			}(c)
		} else if c != nil {
			c.Close()
		}
		runtime.KeepAlive(m)
	}
	printTable(rows, mapRow, n, runs, raw)
	return nil
}

// collect runs the garbage collector, untimed, so that one pass's garbage is not collected on
// the next pass's clock. It does not return memory to the OS (debug.FreeOSMemory): the
// allocating getters would then page-fault fresh heap pages back in on their clock (about
// 100 ns per lookup here), which a warm service does not do.
func collect() {
	runtime.GC()
}

func meanSD(xs []float64) (float64, float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	mean := 0.0
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	v := 0.0
	for _, x := range xs {
		v += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(v / math.Max(float64(len(xs)-1), 1))
}

func column(s []sample, cpu bool) []float64 {
	out := make([]float64, len(s))
	for i, x := range s {
		if cpu {
			out[i] = x.cpu
		} else {
			out[i] = x.wall
		}
	}
	return out
}

func printTable(rows []*row, mapRow *row, n, runs, raw int) {
	cpuModel := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if name, ok := strings.CutPrefix(line, "model name"); ok {
				cpuModel = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
				break
			}
		}
	}
	fmt.Printf("%d keys `key_<i>` -> `val_<i>` (%d raw key+value bytes), %d runs, shuffled "+
		"lookups; ns per key from thread CPU time (wall time in the last columns). %s, "+
		"GOMAXPROCS=%d, %d CPUs (%s).\n\n",
		n, raw, runs, runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU(), cpuModel)
	fmt.Println("| store | lookup ns (mean ± sd) | insert ns (mean ± sd) | build ms (wall) " +
		"| file bytes | file / raw | lookup / Go map | lookup wall ns | insert wall ns |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	mapCPU, mapWall := math.NaN(), math.NaN()
	if mapRow != nil {
		mapCPU, _ = meanSD(column(mapRow.lookups, true))
		mapWall, _ = meanSD(column(mapRow.lookups, false))
	}
	for _, r := range rows {
		l, ls := meanSD(column(r.lookups, true))
		lw, lws := meanSD(column(r.lookups, false))
		insert, insertWall, build, size, ratio := "("+r.note+")", "-", "-", "-", "-"
		if len(r.inserts) > 0 {
			i, is := meanSD(column(r.inserts, true))
			iw, iws := meanSD(column(r.inserts, false))
			b, _ := meanSD(r.buildMS)
			insert = fmt.Sprintf("%.1f ± %.1f", i, is)
			insertWall = fmt.Sprintf("%.1f ± %.1f", iw, iws)
			build = fmt.Sprintf("%.0f", b)
			if r.fileBytes > 0 {
				size = fmt.Sprint(r.fileBytes)
				ratio = fmt.Sprintf("%.2f", float64(r.fileBytes)/float64(raw))
			} else {
				size = "in memory"
			}
		}
		vs := "-"
		if !math.IsNaN(mapCPU) {
			vs = fmt.Sprintf("%.2fx", l/mapCPU)
		}
		fmt.Printf("| %s | %.1f ± %.1f | %s | %s | %s | %s | %s | %.1f ± %.1f | %s |\n",
			r.name, l, ls, insert, build, size, ratio, vs, lw, lws, insertWall)
	}
	if mapRow == nil {
		return
	}
	fmt.Println()
	for _, r := range rows {
		if r == mapRow {
			continue
		}
		l, _ := meanSD(column(r.lookups, true))
		lw, _ := meanSD(column(r.lookups, false))
		verdict := "met"
		if l > 3*mapCPU {
			verdict = "NOT met"
		}
		fmt.Printf("- target Go lookup ≤ 3× Go map (CPU time): %s %.2f×: %s (wall %.2f×)\n",
			r.name, l/mapCPU, verdict, lw/mapWall)
	}
}
