package clients

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func client(t *testing.T, protocol int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: protocol})
	t.Cleanup(func() { c.Close() })
	if err := c.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	return c
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestGoRedisCommandsBothProtocols(t *testing.T) {
	ctx := context.Background()
	for _, protocol := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d", protocol), func(t *testing.T) {
			c := client(t, protocol)
			check(t, c.Set(ctx, "s", "v", time.Minute).Err())
			if got := c.Get(ctx, "s").Val(); got != "v" {
				t.Fatalf("GET: %q", got)
			}
			if ttl := c.TTL(ctx, "s").Val(); ttl <= 0 || ttl > time.Minute {
				t.Fatalf("TTL: %v", ttl)
			}
			if _, err := c.Get(ctx, "missing").Result(); !errors.Is(err, redis.Nil) {
				t.Fatalf("GET of a missing key: %v", err)
			}
			check(t, c.HSet(ctx, "h", map[string]any{"a": 1, "b": "x"}).Err())
			if got := c.HGetAll(ctx, "h").Val(); len(got) != 2 || got["a"] != "1" || got["b"] != "x" {
				t.Fatalf("HGETALL: %v", got)
			}
			check(t, c.ZAdd(ctx, "z", redis.Z{Score: 2, Member: "b"}, redis.Z{Score: 1.5, Member: "a"}).Err())
			zs := c.ZRangeWithScores(ctx, "z", 0, -1).Val()
			if len(zs) != 2 || zs[0].Member != "a" || zs[0].Score != 1.5 || zs[1].Score != 2 {
				t.Fatalf("ZRANGE WITHSCORES: %v", zs)
			}
			check(t, c.SAdd(ctx, "set", "x", "y", "x").Err())
			members := c.SMembers(ctx, "set").Val()
			sort.Strings(members)
			if fmt.Sprint(members) != "[x y]" {
				t.Fatalf("SMEMBERS: %v", members)
			}
			if n := c.IncrByFloat(ctx, "f", 1.25).Val(); n != 1.25 {
				t.Fatalf("INCRBYFLOAT: %v", n)
			}
			if _, err := c.Incr(ctx, "s").Result(); err == nil ||
				err.Error() != "ERR value is not an integer or out of range" {
				t.Fatalf("INCR of a string: %v", err)
			}
			if _, err := c.LPush(ctx, "s", "x").Result(); err == nil ||
				err.Error() != "WRONGTYPE Operation against a key holding the wrong kind of value" {
				t.Fatalf("LPUSH on a string: %v", err)
			}
		})
	}
}

func TestGoRedisPipelineAndScan(t *testing.T) {
	ctx := context.Background()
	c := client(t, 3)
	cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := 0; i < 1000; i++ {
			p.Set(ctx, fmt.Sprintf("k:%d", i), i, 0)
		}
		p.DBSize(ctx)
		return nil
	})
	check(t, err)
	if n := cmds[len(cmds)-1].(*redis.IntCmd).Val(); n != 1000 {
		t.Fatalf("DBSIZE after the pipeline: %d", n)
	}
	seen := map[string]bool{}
	iter := c.Scan(ctx, 0, "k:*", 100).Iterator()
	for iter.Next(ctx) {
		seen[iter.Val()] = true
	}
	check(t, iter.Err())
	if len(seen) != 1000 {
		t.Fatalf("SCAN saw %d keys", len(seen))
	}
}

// The optimistic-locking pattern from go-redis's documentation: WATCH, read, MULTI/EXEC, and
// retry on redis.TxFailedErr. Concurrent increments must all land.
func TestGoRedisWatchTransactionsDoNotLoseIncrements(t *testing.T) {
	ctx := context.Background()
	c := client(t, 3)
	const workers, each = 8, 50
	incr := func() error {
		for retries := 0; retries < 10000; retries++ {
			err := c.Watch(ctx, func(tx *redis.Tx) error {
				n, err := tx.Get(ctx, "counter").Int()
				if err != nil && !errors.Is(err, redis.Nil) {
					return err
				}
				_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Set(ctx, "counter", n+1, 0)
					return nil
				})
				return err
			}, "counter")
			if !errors.Is(err, redis.TxFailedErr) {
				return err
			}
		}
		return errors.New("too many retries")
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := incr(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n, _ := c.Get(ctx, "counter").Int(); n != workers*each {
		t.Fatalf("counter = %d, want %d", n, workers*each)
	}
}

// redis.Script runs EVALSHA and falls back to EVAL on NOSCRIPT.
func TestGoRedisScripts(t *testing.T) {
	ctx := context.Background()
	c := client(t, 3)
	check(t, c.ScriptFlush(ctx).Err())
	script := redis.NewScript(`
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
return {n, redis.call('TYPE', KEYS[1])['ok'], tonumber(ARGV[1]) * 2}`)
	got, err := script.Run(ctx, c, []string{"sc"}, 5).Slice()
	check(t, err)
	if fmt.Sprint(got) != "[5 string 10]" {
		t.Fatalf("first run (EVAL after NOSCRIPT): %v", got)
	}
	if ok := c.ScriptExists(ctx, script.Hash()).Val(); len(ok) != 1 || !ok[0] {
		t.Fatalf("SCRIPT EXISTS: %v", ok)
	}
	got, err = script.Run(ctx, c, []string{"sc"}, 1).Slice()
	check(t, err)
	if fmt.Sprint(got) != "[6 string 2]" {
		t.Fatalf("second run (EVALSHA): %v", got)
	}
	_, err = c.Eval(ctx, "return redis.call('NOPE')", nil).Result()
	if err == nil {
		t.Fatal("an unknown command in a script did not fail")
	}
}

func TestGoRedisPubSub(t *testing.T) {
	ctx := context.Background()
	c := client(t, 3)
	sub := c.Subscribe(ctx, "news")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}
	psub := c.PSubscribe(ctx, "ne*")
	defer psub.Close()
	if _, err := psub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if n := c.Publish(ctx, "news", "hello").Val(); n != 2 {
		t.Fatalf("PUBLISH reached %d subscribers", n)
	}
	msg, err := sub.ReceiveMessage(ctx)
	check(t, err)
	pmsg, err := psub.ReceiveMessage(ctx)
	check(t, err)
	if msg.Channel != "news" || msg.Payload != "hello" || pmsg.Pattern != "ne*" || pmsg.Payload != "hello" {
		t.Fatalf("messages: %+v %+v", msg, pmsg)
	}
}

func TestGoRedisStreamsConsumerGroup(t *testing.T) {
	ctx := context.Background()
	c := client(t, 3)
	for i := 0; i < 10; i++ {
		check(t, c.XAdd(ctx, &redis.XAddArgs{Stream: "st", Values: []string{"n", fmt.Sprint(i)}}).Err())
	}
	check(t, c.XGroupCreate(ctx, "st", "g", "0").Err())
	got := map[string]bool{}
	for _, consumer := range []string{"a", "b"} {
		res, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: consumer,
			Streams: []string{"st", ">"}, Count: 5}).Result()
		check(t, err)
		for _, m := range res[0].Messages {
			if got[m.Values["n"].(string)] {
				t.Fatalf("entry %v delivered twice", m.Values)
			}
			got[m.Values["n"].(string)] = true
			check(t, c.XAck(ctx, "st", "g", m.ID).Err())
		}
	}
	if len(got) != 10 {
		t.Fatalf("delivered %d of 10", len(got))
	}
	pending, err := c.XPending(ctx, "st", "g").Result()
	check(t, err)
	if pending.Count != 0 {
		t.Fatalf("pending after every ack: %d", pending.Count)
	}
	// A blocked reader is woken by the next XADD.
	done := make(chan []redis.XStream, 1)
	go func() {
		r, _ := c.XRead(ctx, &redis.XReadArgs{Streams: []string{"st", "$"}, Block: 10 * time.Second}).Result()
		done <- r
	}()
	time.Sleep(100 * time.Millisecond)
	check(t, c.XAdd(ctx, &redis.XAddArgs{Stream: "st", Values: []string{"n", "late"}}).Err())
	select {
	case r := <-done:
		if len(r) != 1 || r[0].Messages[0].Values["n"] != "late" {
			t.Fatalf("XREAD BLOCK got %v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("XREAD BLOCK was not woken by XADD")
	}
}
