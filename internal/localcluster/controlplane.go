// Package localcluster is an in-process Kubernetes control plane for the
// e2e tests, the throughput benchmark and hami-local: embedded etcd, a real
// kube-apiserver (k8s.io/kubernetes/cmd/kube-apiserver/app/testing), and on
// top of it hami-scheduler's profiles, and optionally the deployment and
// replicaset controllers. Nothing is downloaded; no kubelet or
// controller-manager runs (see internal/localcluster/simnode for simulated
// nodes).
package localcluster

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
)

// Options configure Start.
type Options struct {
	// Log receives etcd's errors and the apiserver's contextual logs; nil
	// discards them. (Code that logs through klog's global functions still
	// writes to klog's output.)
	Log io.Writer
	// Authorize runs the apiserver with --authorization-mode=Node,RBAC, as
	// a cluster runs it, and a token file holding a tenant user
	// (TenantConfig); Config stays an administrator (system:masters).
	// Without it every request is authorized.
	Authorize bool
	// AuditLog, when set, is the path of the apiserver's audit log: one
	// JSON event per request at level Metadata (ReadAudit reads it).
	AuditLog string
	// FeatureGates, e.g. "GenericWorkload=true", are the apiserver's
	// --feature-gates. Gates are process-wide: the schedulers of this
	// process run with them too. GenericWorkload on also serves
	// scheduling.k8s.io/v1beta1 (the in-tree PodGroup).
	FeatureGates string
}

// ControlPlane is a running etcd and kube-apiserver.
type ControlPlane struct {
	// Config reaches the apiserver as an administrator (loopback
	// credentials, no rate limit worth mentioning).
	Config *rest.Config
	// Client uses Config.
	Client kubernetes.Interface
	// TenantConfig reaches the apiserver as a user in no group, whom
	// only RBAC can grant rights; nil on the in-process apiserver (Start),
	// which authorizes every request.
	TenantConfig *rest.Config
	// TenantUser is TenantConfig's user name, for RBAC subjects.
	TenantUser string

	tb       *processTB
	etcd     *embed.Etcd
	teardown func()
}

// flags are the kube-apiserver flags: no controller-manager runs, so the
// ServiceAccount admission plugin (which wants a default service account)
// and TaintNodesByCondition (whose not-ready taint nobody would remove) are
// off.
var flags = []string{
	"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
}

// Start runs etcd and kube-apiserver in this process and returns once the
// apiserver is healthy. Stop ends both; stop schedulers, agents and
// informers first, or the apiserver waits for their watches to end.
func Start(opts Options) (*ControlPlane, error) {
	tb := newProcessTB("hami-control-plane", opts.Log)
	cp := &ControlPlane{tb: tb}
	etcd, endpoint, err := startEtcd(tb.TempDir(), opts.Log)
	if err != nil {
		tb.cleanup()
		return nil, err
	}
	cp.etcd = etcd
	storage := storagebackend.NewDefaultConfig("/registry", nil)
	storage.Transport.ServerList = []string{endpoint}

	instance := kubeapiservertesting.NewDefaultTestServerOptions()
	instance.DisableInvariantChecks = true
	serverFlags, tenantToken, err := optionFlags(tb.TempDir(), opts)
	if err != nil {
		etcd.Close()
		tb.cleanup()
		return nil, err
	}
	var server kubeapiservertesting.TestServer
	err = tb.run(func() {
		var startErr error
		server, startErr = kubeapiservertesting.StartTestServer(tb, instance, serverFlags, storage)
		if startErr != nil {
			tb.Fatalf("start kube-apiserver: %v", startErr)
		}
	})
	if err != nil {
		etcd.Close()
		tb.cleanup()
		return nil, err
	}
	cp.teardown = server.TearDownFn
	cp.Config = rest.CopyConfig(server.ClientConfig)
	cp.Config.QPS, cp.Config.Burst = 5000, 10000
	cp.Client, err = kubernetes.NewForConfig(cp.Config)
	if err != nil {
		cp.Stop()
		return nil, fmt.Errorf("client: %w", err)
	}
	if tenantToken != "" {
		cp.TenantUser = tenantUser
		cp.TenantConfig = rest.AnonymousClientConfig(cp.Config)
		cp.TenantConfig.BearerToken = tenantToken
	}
	return cp, nil
}

// optionFlags are the apiserver's flags for opts, with the files they name
// written in dir; tenantToken is the tenant's token when authorizing.
func optionFlags(dir string, opts Options) (out []string, tenantToken string, err error) {
	out = append(out, flags...)
	if opts.FeatureGates != "" {
		out = append(out, "--feature-gates="+opts.FeatureGates)
		if strings.Contains(opts.FeatureGates, "GenericWorkload=true") {
			out = append(out, "--runtime-config=scheduling.k8s.io/v1beta1=true")
		}
	}
	if opts.Authorize {
		tenantToken = randomToken()
		tokens := filepath.Join(dir, "tokens.csv")
		if err := os.WriteFile(tokens, []byte(fmt.Sprintf("%s,%s,%s\n", tenantToken, tenantUser, tenantUser)), 0o600); err != nil {
			return nil, "", err
		}
		out = append(out, "--authorization-mode=Node,RBAC", "--token-auth-file="+tokens)
	}
	if opts.AuditLog != "" {
		policy := filepath.Join(dir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
			return nil, "", err
		}
		out = append(out, "--audit-policy-file="+policy, "--audit-log-path="+opts.AuditLog, "--audit-log-format=json", "--audit-log-mode=blocking")
	}
	return out, tenantToken, nil
}

// Stop ends the apiserver, then etcd, and removes their files.
func (cp *ControlPlane) Stop() {
	if cp.teardown != nil {
		_ = cp.tb.run(cp.teardown)
		cp.teardown = nil
	}
	if cp.etcd != nil {
		cp.etcd.Close()
		cp.etcd = nil
	}
	cp.tb.cleanup()
}

// startEtcd runs a single-member etcd on free loopback ports with its data
// in dir. Ports are picked by listening and closing, so another process may
// take one in between: try a few times.
func startEtcd(dir string, log io.Writer) (*embed.Etcd, string, error) {
	var errs []error
	for attempt := range 3 {
		e, endpoint, err := tryEtcd(filepath.Join(dir, strconv.Itoa(attempt)), log)
		if err == nil {
			return e, endpoint, nil
		}
		errs = append(errs, err)
	}
	return nil, "", fmt.Errorf("start etcd: %w", errors.Join(errs...))
}

func tryEtcd(dir string, log io.Writer) (*embed.Etcd, string, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, "", err
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", err
	}
	// Single member, never restarted: fsync buys nothing here.
	cfg.UnsafeNoFsync = true
	client := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))}
	peer := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	if log == nil {
		log = io.Discard
	}
	logger := zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.AddSync(log), zapcore.ErrorLevel)).Named("etcd")
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(logger)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", err
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, client.String(), nil
	case <-time.After(time.Minute):
		e.Close()
		return nil, "", fmt.Errorf("etcd did not become ready within a minute")
	}
}

func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
