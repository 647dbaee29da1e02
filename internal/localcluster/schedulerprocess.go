package localcluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/hami-scheduler/hami-scheduler/manifests"
)

// shippedConfigDir is where the shipped Deployment mounts its ConfigMap.
const shippedConfigDir = "/etc/hami"

// SchedulerProcess is a hami-scheduler binary running as its own process,
// started as the shipped Deployment starts it.
type SchedulerProcess struct {
	// Args are the arguments it was started with.
	Args []string

	cmd    *exec.Cmd
	exited *processExit
	out    *lockedBuffer
	port   int
	// metricsAddr is its plain metrics listener (--hami-metrics-bind-address),
	// "" when the container starts none.
	metricsAddr string
	// http reaches its secure port, whose certificate it signed itself.
	http *http.Client
}

// SchedulerProcessOptions configure StartSchedulerProcess.
type SchedulerProcessOptions struct {
	// Deployment is the Deployment whose hami-scheduler container to run;
	// nil is the shipped manifests/scheduler.yaml (the chart rendered for
	// the newest band). Pass the chart rendered for the API server to run
	// what a helm install there would.
	Deployment *appsv1.Deployment
	// Config is the scheduler-config.yaml its ConfigMap holds; nil is the
	// shipped manifests/scheduler-config.yaml.
	Config []byte
	// Log also receives the process's output.
	Log io.Writer
	// Kubeconfig is the kubeconfig the scheduler uses; empty writes one
	// for cp.Config (an administrator). An installed release passes one
	// holding a token of the Deployment's ServiceAccount.
	Kubeconfig string
	// ExtraArgs follow the container's arguments, e.g. a benchmark's
	// --authorization-always-allow-paths to read /metrics.
	ExtraArgs []string
}

// StartSchedulerProcess runs binary (a hami-scheduler build) against the
// control plane with the command, arguments and environment of the
// Deployment's hami-scheduler container and its KubeSchedulerConfiguration
// (by default the shipped ones), written where the arguments expect the
// mounted ConfigMap. Two things
// differ from a pod, both forced by running outside one: the
// configuration's clientConnection names a kubeconfig for cp.Config (a pod
// has in-cluster credentials), and --secure-port and the plain metrics
// listener, if any, are free ports (so that processes on one machine do
// not collide). The namespace of its lease is
// created. It returns once /readyz answers ok, which kube-scheduler gives
// only after every informer synced (/healthz where /readyz is not served),
// or with the process's output when it exits first.
func (cp *ControlPlane) StartSchedulerProcess(ctx context.Context, binary string, opts SchedulerProcessOptions) (*SchedulerProcess, error) {
	return cp.startSchedulerProcess(ctx, binary, opts, 3*time.Minute)
}

func (cp *ControlPlane) startSchedulerProcess(ctx context.Context, binary string, opts SchedulerProcessOptions, readyLimit time.Duration) (*SchedulerProcess, error) {
	dir := cp.tb.TempDir()
	if opts.Deployment == nil {
		var err error
		if opts.Deployment, err = shippedSchedulerDeployment(); err != nil {
			return nil, err
		}
	}
	if opts.Config == nil {
		opts.Config = manifests.SchedulerConfigYAML
	}
	args, env, err := schedulerCommand(opts.Deployment, dir)
	if err != nil {
		return nil, err
	}
	kubeconfig := opts.Kubeconfig
	if kubeconfig == "" {
		kubeconfig = filepath.Join(dir, "kubeconfig")
		if err := cp.WriteKubeconfig(kubeconfig); err != nil {
			return nil, err
		}
	}
	if err := writeSchedulerConfig(filepath.Join(dir, "scheduler-config.yaml"), opts.Config, kubeconfig); err != nil {
		return nil, err
	}
	if err := cp.createLeaseNamespace(ctx, opts.Config); err != nil {
		return nil, err
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	args = append(append(args, opts.ExtraArgs...), "--secure-port="+strconv.Itoa(ports[0]))
	args, metricsAddr := movePlainMetrics(args, ports[1])
	p := &SchedulerProcess{Args: args, out: &lockedBuffer{}, port: ports[0], metricsAddr: metricsAddr, http: &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the scheduler's own loopback port
	}}}
	p.cmd = exec.Command(binary, p.Args...)
	p.cmd.Env = append(os.Environ(), env...)
	var w io.Writer = p.out
	if opts.Log != nil {
		w = io.MultiWriter(p.out, opts.Log)
	}
	p.cmd.Stdout, p.cmd.Stderr = w, w
	if p.exited, err = startProcess(p.cmd); err != nil {
		return nil, err
	}
	if err := p.waitReady(ctx, readyLimit); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// RunSchedulerProcess runs binary as StartSchedulerProcess does and
// waits, at most limit, for it to exit by itself before it is ready; it
// returns the exit error and the output, or err when the scheduler became
// ready or neither happened within limit. A scheduler that refuses its
// API server exits so.
func (cp *ControlPlane) RunSchedulerProcess(ctx context.Context, binary string, opts SchedulerProcessOptions, limit time.Duration) (exitErr error, output string, err error) {
	p, err := cp.startSchedulerProcess(ctx, binary, opts, limit)
	if err == nil {
		p.Stop()
		return nil, p.Output(), fmt.Errorf("%s started and became ready", binary)
	}
	var exited *exitedError
	if !errors.As(err, &exited) {
		return nil, "", err
	}
	return exited.err, exited.output, nil
}

// Get reads path (e.g. /metrics) from the scheduler's secure port, within
// a minute; the path must be one the process lets anyone read
// (--authorization-always-allow-paths).
func (p *SchedulerProcess) Get(ctx context.Context, path string) ([]byte, error) {
	status, body, err := p.get(ctx, path, time.Minute)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d: %s", path, status, tail(string(bytes.TrimSpace(body)), 500))
	}
	return body, nil
}

// get reads path from the secure port, bounded by limit, and returns the
// status code and body.
func (p *SchedulerProcess) get(ctx context.Context, path string, limit time.Duration) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d%s", p.port, path), nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("read %s: %w", path, err)
	}
	return resp.StatusCode, body, nil
}

// MetricsAddress is the address of the plain metrics listener the
// container starts with --hami-metrics-bind-address (moved to a free
// loopback port), "" when it starts none.
func (p *SchedulerProcess) MetricsAddress() string { return p.metricsAddr }

// movePlainMetrics moves the plain metrics listener the arguments start,
// if any, to the loopback port (so that processes on one machine do not
// collide), and returns the arguments and its address.
func movePlainMetrics(args []string, port int) ([]string, string) {
	const flag = "--hami-metrics-bind-address="
	addr := ""
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if v, ok := strings.CutPrefix(a, flag); ok && v != "" {
			addr = "127.0.0.1:" + strconv.Itoa(port)
			out[i] = flag + addr
		}
	}
	return out, addr
}

// Exited reports whether the process has ended.
func (p *SchedulerProcess) Exited() bool { return p.exited.exitedYet() }

// Pid is the process's ID.
func (p *SchedulerProcess) Pid() int { return p.cmd.Process.Pid }

// Output is what the process printed so far.
func (p *SchedulerProcess) Output() string { return p.out.String() }

// Stop ends the process (SIGTERM, then SIGKILL after 20 s).
func (p *SchedulerProcess) Stop() { stopProcess(p.cmd, p.exited) }

// exitedError is a scheduler process that exited before it was ready.
type exitedError struct {
	err    error
	output string
}

func (e *exitedError) Error() string {
	return fmt.Sprintf("hami-scheduler exited before it was ready (%v):\n%s", e.err, e.output)
}

// waitReady polls /readyz (where it is served) on the secure port until
// it answers ok.
func (p *SchedulerProcess) waitReady(ctx context.Context, limit time.Duration) error {
	path := "/readyz"
	var last string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, limit, true, func(ctx context.Context) (bool, error) {
		if p.exited.exitedYet() {
			return false, &exitedError{err: p.exited.err, output: p.Output()}
		}
		status, body, err := p.get(ctx, path, 5*time.Second)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("%d %s", status, bytes.TrimSpace(body))
		// kube-scheduler 1.30 serves no /readyz: /healthz there, which
		// does not wait for the informers (the tests then wait for their
		// pods).
		if status == http.StatusNotFound && path != "/healthz" {
			path = "/healthz"
		}
		return status == http.StatusOK, nil
	})
	var exited *exitedError
	if errors.As(err, &exited) {
		return err
	}
	if err != nil {
		return fmt.Errorf("hami-scheduler not ready (last /readyz: %s): %w\n%s", last, err, tail(p.Output(), 4000))
	}
	return nil
}

// schedulerCommand is the command (less the binary) and environment of
// the Deployment's hami-scheduler container, with paths under the
// ConfigMap's mount point moved to dir.
func schedulerCommand(deployment *appsv1.Deployment, dir string) (args, env []string, err error) {
	c, err := schedulerContainer(deployment)
	if err != nil {
		return nil, nil, err
	}
	all := append(append([]string(nil), c.Command...), c.Args...)
	if len(all) == 0 {
		return nil, nil, fmt.Errorf("Deployment %s: the hami-scheduler container has no command", deployment.Name)
	}
	for _, arg := range all[1:] {
		args = append(args, strings.ReplaceAll(arg, shippedConfigDir+"/", dir+"/"))
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			return nil, nil, fmt.Errorf("Deployment %s: env %s comes from %v, which a process cannot read", deployment.Name, e.Name, e.ValueFrom)
		}
		env = append(env, e.Name+"="+e.Value)
	}
	return args, env, nil
}

// writeSchedulerConfig writes the KubeSchedulerConfiguration config to
// path with clientConnection.kubeconfig set.
func writeSchedulerConfig(path string, config []byte, kubeconfig string) error {
	var cfg map[string]any
	if err := yaml.Unmarshal(config, &cfg); err != nil {
		return fmt.Errorf("scheduler configuration: %w", err)
	}
	conn, _ := cfg["clientConnection"].(map[string]any)
	if conn == nil {
		conn = map[string]any{}
	}
	conn["kubeconfig"] = kubeconfig
	cfg["clientConnection"] = conn
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// createLeaseNamespace creates the namespace of the configuration's leader
// election lease, if it does not exist.
func (cp *ControlPlane) createLeaseNamespace(ctx context.Context, config []byte) error {
	var cfg struct {
		LeaderElection struct {
			ResourceNamespace string `json:"resourceNamespace"`
		} `json:"leaderElection"`
	}
	if err := yaml.Unmarshal(config, &cfg); err != nil {
		return fmt.Errorf("scheduler configuration: %w", err)
	}
	ns := cfg.LeaderElection.ResourceNamespace
	if ns == "" {
		ns = metav1.NamespaceSystem
	}
	_, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	return nil
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// lockedBuffer is a bytes.Buffer safe for a process's writes and a
// reader's String.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
