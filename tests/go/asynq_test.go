package clients

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
)

// asynq, a Go job queue: tasks enqueued by a client, processed by a server with several
// workers, retried when the handler fails, scheduled for later.
func TestAsynqTasksRunOnceRetriesAndSchedules(t *testing.T) {
	client(t, 2) // flushes the keyspace
	opt := asynq.RedisClientOpt{Addr: addr}
	cl := asynq.NewClient(opt)
	defer cl.Close()

	var mu sync.Mutex
	runs := map[string]int{}
	flakyTries := 0
	var laterAt time.Time
	mux := asynq.NewServeMux()
	mux.HandleFunc("work", func(ctx context.Context, task *asynq.Task) error {
		mu.Lock()
		runs[string(task.Payload())]++
		mu.Unlock()
		return nil
	})
	mux.HandleFunc("flaky", func(ctx context.Context, task *asynq.Task) error {
		mu.Lock()
		defer mu.Unlock()
		flakyTries++
		if flakyTries < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	mux.HandleFunc("later", func(ctx context.Context, task *asynq.Task) error {
		mu.Lock()
		laterAt = time.Now()
		mu.Unlock()
		return nil
	})
	srv := asynq.NewServer(opt, asynq.Config{
		Concurrency:              8,
		RetryDelayFunc:           func(int, error, *asynq.Task) time.Duration { return 50 * time.Millisecond },
		DelayedTaskCheckInterval: 100 * time.Millisecond,
		LogLevel:                 asynq.ErrorLevel,
	})
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()

	for i := 0; i < 100; i++ {
		if _, err := cl.Enqueue(asynq.NewTask("work", []byte(fmt.Sprint(i)))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cl.Enqueue(asynq.NewTask("flaky", nil), asynq.MaxRetry(5)); err != nil {
		t.Fatal(err)
	}
	scheduled := time.Now()
	if _, err := cl.Enqueue(asynq.NewTask("later", nil), asynq.ProcessIn(500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	// A unique task refuses a duplicate while the first is known.
	if _, err := cl.Enqueue(asynq.NewTask("work", []byte("u")), asynq.Unique(time.Minute), asynq.ProcessIn(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Enqueue(asynq.NewTask("work", []byte("u")), asynq.Unique(time.Minute), asynq.ProcessIn(time.Hour)); !errors.Is(err, asynq.ErrDuplicateTask) {
		t.Fatalf("a duplicate unique task: %v", err)
	}

	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		done := len(runs) == 100 && flakyTries >= 3 && !laterAt.IsZero()
		mu.Unlock()
		if done {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(runs) != 100 {
		t.Fatalf("%d of 100 tasks ran", len(runs))
	}
	for p, n := range runs {
		if n != 1 {
			t.Fatalf("task %s ran %d times", p, n)
		}
	}
	if flakyTries != 3 {
		t.Fatalf("the flaky task ran %d times, want 3", flakyTries)
	}
	if laterAt.IsZero() || laterAt.Sub(scheduled) < 500*time.Millisecond {
		t.Fatalf("the scheduled task ran at %v after enqueue", laterAt.Sub(scheduled))
	}
	insp := asynq.NewInspector(opt)
	defer insp.Close()
	info, err := insp.GetQueueInfo("default")
	if err != nil {
		t.Fatal(err)
	}
	if info.Scheduled != 1 || info.Retry != 0 || info.Archived != 0 {
		t.Fatalf("queue info: %+v", info)
	}
}
