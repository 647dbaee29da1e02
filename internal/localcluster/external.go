package localcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ExternalOptions configure StartExternal.
type ExternalOptions struct {
	// KubeAPIServer is the kube-apiserver binary to run, of any release
	// 1.28 or later (hack/build-kube-apiserver.sh builds one from Go
	// modules).
	KubeAPIServer string
	// Log receives the apiserver's output and etcd's errors; nil discards
	// them.
	Log io.Writer
	// AuthorizationMode is --authorization-mode; empty is "Node,RBAC", as
	// a cluster runs it.
	AuthorizationMode string
}

// The users of an external control plane's token file.
const (
	adminUser  = "hami-admin"
	tenantUser = "tenant"
)

// StartExternal runs etcd in this process and kube-apiserver from a
// binary, as its own process, and returns once the apiserver is healthy.
// Unlike Start, the apiserver can be of another release than the one
// this module links, and it authorizes every request (Node,RBAC by
// default): Config is a member of system:masters, TenantConfig a user in
// no group, with no rights until RBAC grants some.
func StartExternal(ctx context.Context, opts ExternalOptions) (*ControlPlane, error) {
	tb := newProcessTB("hami-external-control-plane", opts.Log)
	cp := &ControlPlane{tb: tb}
	etcd, endpoint, err := startEtcd(tb.TempDir(), opts.Log)
	if err != nil {
		tb.cleanup()
		return nil, err
	}
	cp.etcd = etcd
	if err := cp.startAPIServer(ctx, opts, endpoint); err != nil {
		cp.Stop()
		return nil, err
	}
	return cp, nil
}

// startAPIServer writes the apiserver's certificate, service account key
// and token file, starts the process and waits for /readyz.
func (cp *ControlPlane) startAPIServer(ctx context.Context, opts ExternalOptions, etcd string) error {
	dir := cp.tb.TempDir()
	ca, err := writeServingCert(dir)
	if err != nil {
		return err
	}
	adminToken, tenantToken := randomToken(), randomToken()
	tokens := filepath.Join(dir, "tokens.csv")
	// token,user,uid,"group1,group2"
	lines := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n%s,%s,%s\n", adminToken, adminUser, adminUser, tenantToken, tenantUser, tenantUser)
	if err := os.WriteFile(tokens, []byte(lines), 0o600); err != nil {
		return err
	}
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	mode := opts.AuthorizationMode
	if mode == "" {
		mode = "Node,RBAC"
	}
	key := filepath.Join(dir, "tls.key")
	args := []string{
		"--etcd-servers=" + etcd,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports[0]),
		"--tls-cert-file=" + filepath.Join(dir, "tls.crt"),
		"--tls-private-key-file=" + key,
		"--token-auth-file=" + tokens,
		"--authorization-mode=" + mode,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + key,
		"--service-account-signing-key-file=" + key,
		"--service-cluster-ip-range=10.0.0.0/24",
		// No kubernetes Service endpoints: 1.37 refuses a loopback
		// advertise address for them.
		"--endpoint-reconciler-type=none",
		// As Start: no controller-manager runs.
		flags[0],
	}
	cmd := exec.Command(opts.KubeAPIServer, args...)
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	cmd.Stdout, cmd.Stderr = log, log
	exited, err := startProcess(cmd)
	if err != nil {
		return err
	}
	cp.teardown = func() { stopProcess(cmd, exited) }

	host := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	cp.Config = &rest.Config{Host: host, BearerToken: adminToken, TLSClientConfig: rest.TLSClientConfig{CAData: ca}, QPS: 5000, Burst: 10000}
	cp.TenantUser = tenantUser
	cp.TenantConfig = &rest.Config{Host: host, BearerToken: tenantToken, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
	if cp.Client, err = kubernetes.NewForConfig(cp.Config); err != nil {
		return err
	}
	return waitReady(ctx, cp.Client, exited)
}

// randomToken is a bearer token of 128 random bits.
func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// waitReady polls /readyz until it answers ok, the process exits or two
// minutes pass (an old apiserver on a loaded machine takes a while).
func waitReady(ctx context.Context, client kubernetes.Interface, exited *processExit) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if exited.exitedYet() {
			return false, fmt.Errorf("kube-apiserver exited: %v", exited.err)
		}
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		return strings.TrimSpace(string(body)) == "ok", nil
	})
	if err != nil && last != "" && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("kube-apiserver not ready: %w (last: %s)", err, last)
	}
	return err
}
