package release

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// startWebhooks starts every replica of the hami-webhook Deployment and
// waits until the API server sends it pods.
func (r *Release) startWebhooks(ctx context.Context) error {
	d, err := r.Deployment("hami-webhook")
	if err != nil {
		return err
	}
	var addrs []string
	for i := range int(ptr.Deref(d.Spec.Replicas, 1)) {
		p, err := r.startWebhook(ctx, d.Spec.Template.Spec, fmt.Sprintf("hami-webhook-%d", i))
		if err != nil {
			return err
		}
		r.Webhooks = append(r.Webhooks, p)
		addrs = append(addrs, p.Ports["bind-address"])
	}
	r.proxy.setBackends(addrs)
	return r.waitAdmitting(ctx, &d.Spec.Template.Spec.Containers[0], 2*time.Minute)
}

// startWebhook runs one replica of the pod spec's webhook container.
func (r *Release) startWebhook(ctx context.Context, spec corev1.PodSpec, name string) (*Process, error) {
	c := &spec.Containers[0]
	dir := filepath.Join(r.opts.Dir, name)
	dirs, err := volumeFiles(dir, &spec, c, r.readVolume(ctx))
	if err != nil {
		return nil, err
	}
	kubeconfig, err := r.serviceAccountKubeconfig(ctx, r.Namespace, spec.ServiceAccountName, dir)
	if err != nil {
		return nil, err
	}
	args := movePaths(append([]string(nil), c.Args...), dirs)
	ports := map[string]string{}
	for _, flag := range []string{"bind-address", "health-probe-bind-address", "metrics-bind-address"} {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		ports[flag] = addr
		args = setArg(args, flag, addr)
	}
	args = setArg(args, "cert-dns-name", "localhost")
	env := append(baseEnv(), "KUBECONFIG="+kubeconfig)
	for _, e := range c.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	p, err := start(name, r.opts.Webhook, args, env, r.opts.Log)
	if err != nil {
		return nil, err
	}
	p.Ports = ports
	p.stop = append(p.stop, r.syncVolumes(ctx, dir, &spec, c))
	if err := waitHTTP(ctx, p, "http://"+ports["health-probe-bind-address"]+"/readyz", 2*time.Minute); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// readVolume reads a Secret's or ConfigMap's data as the kubelet does.
func (r *Release) readVolume(ctx context.Context) func(kind, name string) (map[string][]byte, error) {
	return func(kind, name string) (map[string][]byte, error) {
		if kind == "Secret" {
			s, err := r.cp.Client.CoreV1().Secrets(r.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return s.Data, nil
		}
		cm, err := r.cp.Client.CoreV1().ConfigMaps(r.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		out := map[string][]byte{}
		for k, v := range cm.Data {
			out[k] = []byte(v)
		}
		return out, nil
	}
}

// syncVolumes keeps the mounted files current, as the kubelet does (it
// takes up to a minute; here half a second), until the returned stop.
func (r *Release) syncVolumes(ctx context.Context, dir string, spec *corev1.PodSpec, c *corev1.Container) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, false, func(ctx context.Context) (bool, error) {
			_, _ = volumeFiles(dir, spec, c, r.readVolume(ctx))
			return false, nil
		})
	}()
	return func() { cancel(); <-done }
}

// waitHTTP polls url until it answers 200, failing early if the process
// exits.
func waitHTTP(ctx context.Context, p *Process, url string, limit time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, limit, true, func(context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("%s exited: %v\n%s", p.Name, p.err, p.Output())
		}
		resp, err := client.Get(url)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		resp.Body.Close()
		last = strconv.Itoa(resp.StatusCode)
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("%s %w at %s (last: %s): %v\n%s", p.Name, errNotReady, url, last, err, tailOf(p.Output(), 3000))
	}
	return nil
}

// waitAdmitting waits until the API server sends pods of the default
// namespace to the webhook, which gives them the scheduler name its
// container's --scheduler-name says.
func (r *Release) waitAdmitting(ctx context.Context, container *corev1.Container, limit time.Duration) error {
	schedulerName := ""
	for _, a := range container.Args {
		if v, ok := strings.CutPrefix(a, "--scheduler-name="); ok {
			schedulerName = v
		}
	}
	if schedulerName == "" {
		return fmt.Errorf("webhook container %s has no --scheduler-name", container.Name)
	}
	if err := localcluster.WaitWebhookAdmits(ctx, r.cp.Client, metav1.NamespaceDefault, "nvidia.com/gpu", schedulerName, limit); err != nil {
		out := ""
		for _, w := range r.Webhooks {
			out += tailOf(w.Output(), 2000)
		}
		return fmt.Errorf("the API server does not send pods to the webhook: %w\n%s", err, out)
	}
	return nil
}

func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
