package main

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	configv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
)

// runMainEnv makes the test binary run hami-scheduler's main instead of
// its tests, so that a test can start the command as a process of its own.
const runMainEnv = "HAMI_SCHEDULER_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// closedPort is an address on which nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// TestBadArgsNamedWithoutServer starts hami-scheduler as a process whose
// kubeconfig points at a closed port: a bad HAMi or Coscheduling arg must
// end it with the arg's field path, not with the connection (which its
// start retries for serverVersionTimeout, 60 s, before giving up).
func TestBadArgsNamedWithoutServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	kubeconfig := kubeconfigFor(t, "https://"+closedPort(t))
	clientConnection := "clientConnection:\n  kubeconfig: " + kubeconfig + "\n"
	tests := []struct {
		name   string
		config string
		want   []string
	}{{
		name:   "unsupported policy",
		config: profile("hami-scheduler", "nodeSchedulerPolicy: fastest\n"),
		want:   []string{`profiles[0].pluginConfig[0].args.nodeSchedulerPolicy: Unsupported value: "fastest": supported values: "binpack", "spread"`},
	}, {
		name:   "misspelt key",
		config: profile("hami-scheduler", "nodeSchedulerPolcy: spread\n"),
		want:   []string{"decoding .profiles[0].pluginConfig[0]", `unknown field "nodeSchedulerPolcy"`},
	}, {
		name:   "Coscheduling arg out of range",
		config: profile("hami-scheduler", "nodeLockWait: 10s\n") + "  - name: Coscheduling\n    args:\n      podGroupRejectPercentage: 150\n",
		want:   []string{"profiles[0].pluginConfig[1].args.podGroupRejectPercentage: Invalid value: 150"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeFile(t, "config.yaml", header+clientConnection+"profiles:\n"+tt.config)
			out, err := runProcess(t, "--config", file)
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("hami-scheduler ended with %v, want a non-zero exit; output:\n%s", err, out)
			}
			for _, s := range tt.want {
				if !strings.Contains(out, s) {
					t.Errorf("output lacks %q:\n%s", s, out)
				}
			}
			if strings.Contains(out, "reading the API server's version") {
				t.Errorf("the start waited for the API server before naming the arg:\n%s", out)
			}
		})
	}
}

// runProcess runs hami-scheduler's main in a process of its own (this test
// binary, re-executed) with args, and returns its combined output. A
// generous deadline ends a process that waits for the server instead.
func runProcess(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1", configv1.NodeLockExpiryEnv+"=")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("hami-scheduler still running after 20 s; output:\n%s", out)
	}
	return string(out), err
}
