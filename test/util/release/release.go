// Package release installs the chart as a cluster runs it, on a local
// control plane that enforces RBAC: every rendered object applied as an
// administrator would apply it, and hami-scheduler and hami-webhook run as
// processes with their containers' command, arguments and environment,
// their mounted ConfigMaps and Secrets written where the pod spec mounts
// them, and a kubeconfig holding a token of their pod's ServiceAccount
// (TokenRequest). A request the shipped RBAC forbids is refused as in a
// cluster, and shows in the API server's audit log.
//
// What differs from a pod, all forced by running outside one: addresses
// (every listening port is a free loopback port; the webhook's
// MutatingWebhookConfiguration calls https://localhost:<port>, a proxy in
// front of the replicas standing for the Service, and the webhook's own
// certificate names localhost), the credentials' form (a kubeconfig file
// instead of the projected token) and the files' place (mount paths moved
// under a directory of the test).
package release

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hami-scheduler/hami-scheduler/hack/manifestgen"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
)

// Options configure Install.
type Options struct {
	// Values are the chart values over its defaults.
	Values map[string]any
	// Scheduler and Webhook are the binaries of hami-scheduler and
	// hami-webhook to run.
	Scheduler, Webhook string
	// Dir holds the release's files (mounted volumes, kubeconfigs).
	Dir string
	// Log receives the processes' output.
	Log io.Writer
}

// Release is an installed chart and its running processes.
type Release struct {
	// Namespace is the release namespace.
	Namespace string
	// Objects are the rendered objects, as applied.
	Objects []*unstructured.Unstructured
	// Schedulers and Webhooks are the replicas, as many as each
	// Deployment's spec.replicas.
	Schedulers []*localcluster.SchedulerProcess
	Webhooks   []*Process

	cp    *localcluster.ControlPlane
	opts  Options
	proxy *proxy
	stop  []func()
}

// Install renders the chart for the control plane's API server, applies
// every object, and starts every replica of both Deployments; it returns
// once they are ready and the API server sends pods to the webhook.
func Install(ctx context.Context, cp *localcluster.ControlPlane, opts Options) (r *Release, err error) {
	caps, err := manifestgen.ServerCapabilities(cp.Client.Discovery())
	if err != nil {
		return nil, err
	}
	rendered, err := manifestgen.RenderFor(filepath.Join(manifestgen.RepoRoot(), manifestgen.ChartPath), manifestgen.Namespace, opts.Values, caps)
	if err != nil {
		return nil, err
	}
	objs, err := manifestgen.Decode(manifestgen.Documents(rendered))
	if err != nil {
		return nil, err
	}
	r = &Release{Namespace: manifestgen.Namespace, Objects: objs, cp: cp, opts: opts}
	defer func() {
		if err != nil {
			r.Uninstall()
			r = nil
		}
	}()
	if r.proxy, err = startProxy(); err != nil {
		return nil, err
	}
	r.stop = append(r.stop, r.proxy.close)
	if err := r.apply(ctx); err != nil {
		return nil, err
	}
	if err := r.startWebhooks(ctx); err != nil {
		return nil, err
	}
	if err := r.startSchedulers(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// Uninstall stops every process; the objects stay (the control plane is
// the test's).
func (r *Release) Uninstall() {
	for _, s := range r.Schedulers {
		s.Stop()
	}
	r.Schedulers = nil
	for _, w := range r.Webhooks {
		w.Stop()
	}
	r.Webhooks = nil
	for i := len(r.stop) - 1; i >= 0; i-- {
		r.stop[i]()
	}
	r.stop = nil
}

// Deployment is the rendered Deployment of the name.
func (r *Release) Deployment(name string) (*appsv1.Deployment, error) {
	for _, o := range r.Objects {
		if o.GetKind() == "Deployment" && o.GetName() == name {
			d := &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
				return nil, err
			}
			return d, nil
		}
	}
	return nil, fmt.Errorf("the chart renders no Deployment %s", name)
}

// object is the rendered object of the kind and name.
func (r *Release) object(kind, name string) *unstructured.Unstructured {
	for _, o := range r.Objects {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// volumeFiles writes, under root, the files the pod's ConfigMap and
// Secret volumes put at their containers' mount paths, and returns the
// mapping from each mount path to its directory. read fetches a Secret's
// or ConfigMap's data as the kubelet would (the API's current copy).
func volumeFiles(root string, spec *corev1.PodSpec, c *corev1.Container, read func(kind, name string) (map[string][]byte, error)) (map[string]string, error) {
	dirs := map[string]string{}
	for _, m := range c.VolumeMounts {
		i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if i < 0 {
			return nil, fmt.Errorf("container %s mounts volume %s, which the pod does not define", c.Name, m.Name)
		}
		v := spec.Volumes[i]
		var kind, name string
		switch {
		case v.ConfigMap != nil:
			kind, name = "ConfigMap", v.ConfigMap.Name
		case v.Secret != nil:
			kind, name = "Secret", v.Secret.SecretName
		default:
			return nil, fmt.Errorf("volume %s: only ConfigMap and Secret volumes are modelled", v.Name)
		}
		data, err := read(kind, name)
		if err != nil {
			return nil, fmt.Errorf("volume %s (%s %s): %w", v.Name, kind, name, err)
		}
		dir := filepath.Join(root, filepath.FromSlash(m.MountPath))
		if err := writeFiles(dir, data); err != nil {
			return nil, err
		}
		dirs[m.MountPath] = dir
	}
	return dirs, nil
}

// writeFiles replaces dir's files by data, as the kubelet updates a
// mounted volume.
func writeFiles(dir string, data map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, content := range data {
		tmp := filepath.Join(dir, "."+name+".tmp")
		if err := os.WriteFile(tmp, content, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// movePaths rewrites the arguments that name a file under a mount path to
// its directory under the release's root.
func movePaths(args []string, dirs map[string]string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		for mount, dir := range dirs {
			if k, v, ok := strings.Cut(a, "="); ok && (v == mount || strings.HasPrefix(v, mount+"/")) {
				out[i] = k + "=" + dir + strings.TrimPrefix(v, mount)
			}
		}
	}
	return out
}

// setArg replaces the value of --name in args, or appends it.
func setArg(args []string, name, value string) []string {
	for i, a := range args {
		if a == "--"+name || strings.HasPrefix(a, "--"+name+"=") {
			args[i] = "--" + name + "=" + value
			return args
		}
	}
	return append(args, "--"+name+"="+value)
}

// errNotReady wraps a process that did not become ready.
var errNotReady = errors.New("not ready")

func unstructuredString(obj map[string]any, fields ...string) (string, bool, error) {
	return unstructured.NestedString(obj, fields...)
}

// mkdir makes dir (errors surface when it is written to) and returns it.
func mkdir(dir string) string {
	_ = os.MkdirAll(dir, 0o700)
	return dir
}

func logOrDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
