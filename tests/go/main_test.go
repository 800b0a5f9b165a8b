// Package clients runs Go libraries written for Redis, unchanged, against the server under
// test: go-redis (the client: RESP3, pipelines, transactions with WATCH, scripts, pub/sub,
// streams) and asynq (a job queue on go-redis, its state changes in Lua scripts).
//
// TestMain starts larder (LARDER_BIN, or the release build) on a free port, or redis-server
// with TARGET=redis, so the same expectations are checked against Redis.
package clients

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// addr is the server's host:port, set by TestMain.
var addr string

func TestMain(m *testing.M) {
	cmd, dir, err := start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
	}
	if code != 0 {
		if b, err := os.ReadFile(filepath.Join(dir, "server.log")); err == nil {
			tail := b
			if len(tail) > 4000 {
				tail = tail[len(tail)-4000:]
			}
			fmt.Fprintf(os.Stderr, "--- server log tail ---\n%s\n", tail)
		}
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func start() (*exec.Cmd, string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir, err := os.MkdirTemp("", "larder-go-")
	if err != nil {
		return nil, "", err
	}
	var argv []string
	if os.Getenv("TARGET") == "redis" {
		argv = []string{"redis-server", "--port", fmt.Sprint(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir}
	} else {
		bin := os.Getenv("LARDER_BIN")
		if bin == "" {
			bin, _ = filepath.Abs(filepath.Join("..", "..", "target", "release", "larder"))
		}
		argv = []string{bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1",
			"--memcached-port", "0", "--http-port", "0", "--appendonly", "no", "--save", "",
			"--dir", dir}
	}
	log, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	addr = fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			fmt.Fprint(c, "PING\r\n")
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if line == "+PONG\r\n" {
				return cmd, dir, nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	b, _ := os.ReadFile(filepath.Join(dir, "server.log"))
	return nil, "", fmt.Errorf("%s did not start:\n%s", argv[0], b)
}
