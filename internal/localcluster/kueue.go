package localcluster

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// KueueNamespace is the namespace of Kueue's controller-manager, as its
// release installs it.
const KueueNamespace = "kueue-system"

// KueueBinaryEnv names the environment variable holding the path of
// Kueue's controller-manager built from Go modules (make bin/kueue, which
// make test sets it to).
const KueueBinaryEnv = "HAMI_KUEUE_BINARY"

// KueueFrameworks are the Kueue integrations the local cluster runs: Jobs
// and plain pods (their controllers run here: the Job controller in
// Controllers, pods on the simulated nodes).
var KueueFrameworks = []string{"batch/job", "pod"}

// HAMiResourceTransformations is the resources.transformations section of
// Kueue's Configuration that Kueue's page for HAMi gives (Kueue 0.16 and
// later): a ClusterQueue counts nvidia.com/total-gpumem and
// nvidia.com/total-gpucores, each container's per-card memory and cores
// times its card count.
const HAMiResourceTransformations = `  transformations:
  - input: nvidia.com/gpucores
    strategy: Replace
    multiplyBy: nvidia.com/gpu
    outputs:
      nvidia.com/total-gpucores: "1"
  - input: nvidia.com/gpumem
    strategy: Replace
    multiplyBy: nvidia.com/gpu
    outputs:
      nvidia.com/total-gpumem: "1"
`

// kueueMetricsCertDir is where Kueue's controller-manager reads its
// metrics certificate when it does not manage its certificates itself (a
// Secret mounted there in a cluster); the path is fixed in its main.
const kueueMetricsCertDir = "/etc/kueue/metrics/certs"

// KueueOptions configure StartKueue.
type KueueOptions struct {
	// Binary is Kueue's controller-manager (KueueBinaryEnv's when empty).
	Binary string
	// Log receives its output.
	Log io.Writer
}

// Kueue is Kueue's controller-manager running as a process against the
// control plane, its webhooks registered with the API server.
type Kueue struct {
	cmd      *exec.Cmd
	exited   *processExit
	out      *lockedBuffer
	webhooks []string
	cp       *ControlPlane
}

// KueueModuleDir returns the directory of the sigs.k8s.io/kueue module
// hack/kueue builds, in the module cache (go mod download), whose config/
// holds Kueue's CRDs and webhook configurations.
func KueueModuleDir() (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kueue")
	cmd.Dir = filepath.Join(repoRoot(), "hack", "kueue")
	out, err := cmd.Output()
	if err == nil && strings.TrimSpace(string(out)) == "" {
		err = errors.New("empty module directory")
	}
	if err != nil {
		dl := exec.Command("go", "mod", "download", "sigs.k8s.io/kueue")
		dl.Dir = cmd.Dir
		if derr := dl.Run(); derr != nil {
			return "", fmt.Errorf("find sigs.k8s.io/kueue's module: %v; go mod download: %w", err, derr)
		}
		if out, err = cmd.Output(); err != nil {
			return "", fmt.Errorf("find sigs.k8s.io/kueue's module: %w", err)
		}
	}
	return strings.TrimSpace(string(out)), nil
}

// repoRoot is the source tree this package was built from (hami-local
// is built without -trimpath, as for the apiserver's test certificates).
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// InstallKueueCRDs creates Kueue's CustomResourceDefinitions from its
// module (config/components/crd/bases), as its release does, and waits
// until each is served.
func InstallKueueCRDs(ctx context.Context, cp *ControlPlane) error {
	dir, err := KueueModuleDir()
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(dir, "config", "components", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in %s/config/components/crd/bases: %v", dir, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if err := CreateCRD(ctx, cp.Config, &crd); err != nil {
			return err
		}
	}
	return nil
}

// StartKueue runs Kueue's controller-manager against the control plane,
// as its release runs it but for what a process outside a pod needs: its
// CRDs are installed (InstallKueueCRDs), its Configuration is written with
// HAMi's resource transformations and the Job and pod integrations, its
// webhooks serve on a free loopback port with a certificate of their own
// and are registered by URL (from its module's webhook manifests, those
// of Kueue's own objects and of the integrations it runs), and it reaches
// the API server as an administrator. It returns once the webhooks answer
// and the API server calls them.
func (cp *ControlPlane) StartKueue(ctx context.Context, opts KueueOptions) (*Kueue, error) {
	if opts.Binary == "" {
		opts.Binary = os.Getenv(KueueBinaryEnv)
	}
	if opts.Binary == "" {
		return nil, fmt.Errorf("no Kueue binary: build it with make bin/kueue and set %s", KueueBinaryEnv)
	}
	if err := InstallKueueCRDs(ctx, cp); err != nil {
		return nil, err
	}
	if err := createNamespace(ctx, cp, KueueNamespace); err != nil {
		return nil, err
	}
	if err := ensureKueueMetricsCert(); err != nil {
		return nil, err
	}
	dir := cp.tb.TempDir()
	certDir := filepath.Join(dir, "certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, err
	}
	ca, err := writeServingCert(certDir)
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	webhookPort, healthPort, visibilityPort := ports[0], ports[1], ports[2]
	config := filepath.Join(dir, "kueue-config.yaml")
	if err := os.WriteFile(config, []byte(kueueConfiguration(certDir, webhookPort, healthPort)), 0o600); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig); err != nil {
		return nil, err
	}
	k := &Kueue{cp: cp, out: &lockedBuffer{}}
	var out io.Writer = k.out
	if opts.Log != nil {
		out = io.MultiWriter(k.out, opts.Log)
	}
	k.cmd = exec.Command(opts.Binary, "--config="+config, "--kubeconfig="+kubeconfig,
		"--visibility-server-port="+strconv.Itoa(visibilityPort), "--zap-log-level=2")
	k.cmd.Stdout, k.cmd.Stderr = out, out
	if k.exited, err = startProcess(k.cmd); err != nil {
		return nil, err
	}
	url := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(webhookPort))
	if err := k.waitReady(ctx, healthPort, url, 3*time.Minute); err != nil {
		k.Stop()
		return nil, err
	}
	if err := k.register(ctx, url, ca); err != nil {
		k.Stop()
		return nil, err
	}
	if err := k.waitAdmitting(ctx, time.Minute); err != nil {
		k.Stop()
		return nil, err
	}
	return k, nil
}

// kueueConfiguration is Kueue's Configuration for the local cluster.
func kueueConfiguration(certDir string, webhookPort, healthPort int) string {
	return fmt.Sprintf(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: %s
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
clientConnection:
  qps: 500
  burst: 1000
featureGates:
  VisibilityOnDemand: false
integrations:
  frameworks: [%s]
resources:
%s`, KueueNamespace, healthPort, webhookPort, certDir, `"`+strings.Join(KueueFrameworks, `", "`)+`"`, HAMiResourceTransformations)
}

// ensureKueueMetricsCert writes a throw-away certificate where Kueue's
// controller-manager reads its metrics certificate, unless one is there
// (its metrics listener is off here, but it reads the files at start).
func ensureKueueMetricsCert() error {
	if _, err := os.Stat(filepath.Join(kueueMetricsCertDir, "tls.key")); err == nil {
		return nil
	}
	tmp, err := os.MkdirTemp("", "kueue-metrics-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if _, err := writeServingCert(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(kueueMetricsCertDir, 0o755); err != nil {
		return fmt.Errorf("Kueue's controller-manager reads its metrics certificate from %s (a Secret in a cluster): %w", kueueMetricsCertDir, err)
	}
	for _, f := range []string{"tls.crt", "tls.key"} {
		data, err := os.ReadFile(filepath.Join(tmp, f))
		if err != nil {
			return err
		}
		// Written aside and renamed: several local clusters may start at once.
		part := filepath.Join(kueueMetricsCertDir, f+".tmp"+strconv.Itoa(os.Getpid()))
		if err := os.WriteFile(part, data, 0o600); err != nil {
			return err
		}
		if err := os.Rename(part, filepath.Join(kueueMetricsCertDir, f)); err != nil {
			return err
		}
	}
	return nil
}

// waitReady waits until Kueue's readiness probe answers ok and its
// webhook server completes a TLS handshake.
func (k *Kueue) waitReady(ctx context.Context, healthPort int, webhookURL string, limit time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a probe of our own loopback listener
	ready := fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort)
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, limit, true, func(ctx context.Context) (bool, error) {
		if k.exited.exitedYet() {
			return false, fmt.Errorf("kueue exited: %v\n%s", k.exited.err, k.out.String())
		}
		for _, u := range []string{ready, webhookURL} {
			resp, err := client.Get(u)
			if err != nil {
				return false, nil
			}
			resp.Body.Close()
			if u == ready && resp.StatusCode != http.StatusOK {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("kueue not ready within %s: %w\n%s", limit, err, tail(k.out.String(), 4000))
	}
	return nil
}

// register creates Kueue's webhook configurations from its module's
// manifests, named as its release names them, pointed at url: the
// webhooks of Kueue's own objects and of the integrations it runs.
func (k *Kueue) register(ctx context.Context, url string, ca []byte) error {
	dir, err := KueueModuleDir()
	if err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(dir, "config", "components", "webhook", "manifests.yaml"))
	if err != nil {
		return err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return err
		}
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			var c admissionv1.MutatingWebhookConfiguration
			if err := yaml.Unmarshal(doc, &c); err != nil {
				return err
			}
			c.Name = "kueue-" + c.Name
			c.Webhooks = slices.DeleteFunc(c.Webhooks, func(w admissionv1.MutatingWebhook) bool { return kueueWebhookPath(w.ClientConfig) == "" })
			for i := range c.Webhooks {
				pointAt(&c.Webhooks[i].ClientConfig, &c.Webhooks[i].NamespaceSelector, c.Webhooks[i].Name, url, ca)
			}
			if _, err := k.cp.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &c, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("register Kueue's webhooks: %w", err)
			}
			k.webhooks = append(k.webhooks, "mutating/"+c.Name)
		case "ValidatingWebhookConfiguration":
			var c admissionv1.ValidatingWebhookConfiguration
			if err := yaml.Unmarshal(doc, &c); err != nil {
				return err
			}
			c.Name = "kueue-" + c.Name
			c.Webhooks = slices.DeleteFunc(c.Webhooks, func(w admissionv1.ValidatingWebhook) bool { return kueueWebhookPath(w.ClientConfig) == "" })
			for i := range c.Webhooks {
				pointAt(&c.Webhooks[i].ClientConfig, &c.Webhooks[i].NamespaceSelector, c.Webhooks[i].Name, url, ca)
			}
			if _, err := k.cp.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &c, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("register Kueue's webhooks: %w", err)
			}
			k.webhooks = append(k.webhooks, "validating/"+c.Name)
		}
	}
}

// pointAt points a webhook of Kueue's manifests that the local cluster
// registers at url with the CA ca, and gives it the release's namespace
// selector.
func pointAt(cc *admissionv1.WebhookClientConfig, sel **metav1.LabelSelector, name, url string, ca []byte) {
	*cc = admissionv1.WebhookClientConfig{URL: ptr.To(url + kueueWebhookPath(*cc)), CABundle: ca}
	*sel = kueueNamespaceSelector(name, *sel)
}

// kueueWebhookPath is the path of a webhook of Kueue's manifests that the
// local cluster registers, "" for the others (integrations it does not
// run, whose handlers Kueue does not serve).
func kueueWebhookPath(c admissionv1.WebhookClientConfig) string {
	if c.Service == nil || c.Service.Path == nil {
		return ""
	}
	path := *c.Service.Path
	for _, served := range []string{"-kueue-x-k8s-io-", "-batch-v1-job", "--v1-pod"} {
		if strings.Contains(path, served) {
			return path
		}
	}
	return ""
}

// kueueNamespaceSelector is the release's selector of the pod webhooks
// (kustomize patches them to leave kube-system and Kueue's namespace
// alone); others keep theirs.
func kueueNamespaceSelector(name string, sel *metav1.LabelSelector) *metav1.LabelSelector {
	if name != "mpod.kb.io" && name != "vpod.kb.io" {
		return sel
	}
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: []string{metav1.NamespaceSystem, KueueNamespace},
	}}}
}

// waitAdmitting waits until the API server calls Kueue's webhooks: a
// dry-run ResourceFlavor comes back defaulted by them.
func (k *Kueue) waitAdmitting(ctx context.Context, limit time.Duration) error {
	rf := map[string]any{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": map[string]any{"generateName": "probe-"}}
	body, err := yaml.Marshal(rf)
	if err != nil {
		return err
	}
	body, err = yaml.YAMLToJSON(body)
	if err != nil {
		return err
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, limit, true, func(ctx context.Context) (bool, error) {
		res := k.cp.Client.CoreV1().RESTClient().Post().AbsPath("/apis/kueue.x-k8s.io/v1beta2/resourceflavors").Param("dryRun", "All").Body(body).Do(ctx)
		last = res.Error()
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("Kueue's webhooks not called within %s (last: %v): %w", limit, last, err)
	}
	return nil
}

// Output is what the process printed so far.
func (k *Kueue) Output() string { return k.out.String() }

// Stop unregisters the webhooks and ends the process.
func (k *Kueue) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, w := range k.webhooks {
		kind, name, _ := strings.Cut(w, "/")
		var err error
		if kind == "mutating" {
			err = k.cp.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{})
		} else {
			err = k.cp.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			fmt.Fprintf(os.Stderr, "unregister %s: %v\n", w, err)
		}
	}
	stopProcess(k.cmd, k.exited)
}

// createNamespace creates the namespace unless it exists.
func createNamespace(ctx context.Context, cp *ControlPlane, name string) error {
	_, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}
