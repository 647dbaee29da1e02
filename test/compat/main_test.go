// Package compat runs hami-scheduler, as a binary started the way the chart
// rendered for the API server starts it, against a kube-apiserver of a
// chosen Kubernetes release running as its own process with RBAC enforced
// (internal/localcluster StartExternal), with HAMi's faithful node side
// (internal/localcluster/simnode) and the webhook registered from the
// shipped YAML. `make test-compat` builds the API servers and the scheduler
// builds and runs this package once per minor; `make test` skips it (it
// needs the binaries).
//
// Flags: -kube-apiserver (the API server binary) and -bin (the directory
// of the scheduler builds, make build's bin/). The suite runs the build
// of the band that serves the API server's minor (internal/kubeversion:
// bin/hami-scheduler for the newest, bin/hami-scheduler-1.N for band 1.N);
// where no band serves it, it runs the newest build and checks only that
// it refuses the API server at start, with the message that names its
// range.
package compat

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/hami-scheduler/hami-scheduler/hack/manifestgen"
	"github.com/hami-scheduler/hami-scheduler/internal/kubeversion"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

var (
	kubeAPIServer = flag.String("kube-apiserver", "", "kube-apiserver binary to run the suite against")
	binDir        = flag.String("bin", "", "directory of the hami-scheduler builds (make build's bin/)")
)

var (
	controlPlane *localcluster.ControlPlane
	// serverVersion is the API server's /version.
	serverVersion *version.Version
	// wantRefusal: no band serves the API server, and the suite checks
	// that the newest build refuses it.
	wantRefusal bool
	// refusal is the scheduler's exit and output then.
	refusal struct {
		exitErr error
		output  string
	}
)

func TestMain(m *testing.M) {
	flag.Parse()
	if *kubeAPIServer == "" || *binDir == "" {
		fmt.Println("compat: no -kube-apiserver and -bin given; run make test-compat")
		os.Exit(m.Run())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	return localcluster.RunLogged("hami-compat", 2, "control plane, node side and scheduler logs", func(logFile *os.File) int {
		return runWithCluster(m, logFile)
	})
}

func runWithCluster(m *testing.M, logFile *os.File) int {
	ctx := context.Background()
	cp, err := localcluster.StartExternal(ctx, localcluster.ExternalOptions{KubeAPIServer: *kubeAPIServer, Log: logFile})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start control plane:", err)
		return 1
	}
	controlPlane = cp
	defer cp.Stop()
	info, err := cp.Client.Discovery().ServerVersion()
	if err != nil {
		fmt.Fprintln(os.Stderr, "API server version:", err)
		return 1
	}
	if serverVersion, err = version.ParseGeneric(info.GitVersion); err != nil {
		fmt.Fprintln(os.Stderr, "API server version:", err)
		return 1
	}
	binary := schedulerFor(int(serverVersion.Minor()))
	schedulerVersion, err := binaryVersion(binary)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Named in the output of every run, as make test-compat promises.
	fmt.Printf("compat: API server %s (%s), %s %s\n", info.GitVersion, *kubeAPIServer, binary, schedulerVersion)

	if wantRefusal {
		fmt.Printf("compat: no band serves Kubernetes 1.%d; checking that %s refuses it\n", serverVersion.Minor(), binary)
		refusal.exitErr, refusal.output, err = cp.RunSchedulerProcess(ctx, binary, localcluster.SchedulerProcessOptions{}, time.Minute)
		if err != nil {
			fmt.Fprintln(os.Stderr, "refusal:", err)
			return 1
		}
		return m.Run()
	}

	// The faithful node side: HAMi's device plugin client limits and the
	// kubelet's admission delay.
	agent, err := simnode.NewAgent(cp.Config, simnode.Options{Workers: 8})
	if err != nil {
		fmt.Fprintln(os.Stderr, "node agent:", err)
		return 1
	}
	if err := agent.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "start node agent:", err)
		return 1
	}
	defer agent.Stop()
	// Registered under its own name, so that TestChartInstalls can dry-run
	// the chart's configuration as a new object.
	webhook, err := localcluster.StartWebhook(ctx, cp.Config, localcluster.WebhookOptions{ConfigurationName: "compat-hami-webhook"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start webhook:", err)
		return 1
	}
	defer webhook.Stop()
	// What helm install would run on this server: the chart rendered for
	// its capabilities (image band, feature gates the band knows).
	objs, err := chartObjects()
	if err != nil {
		fmt.Fprintln(os.Stderr, "render the chart for this API server:", err)
		return 1
	}
	// The chart's CRDs (scheduler-plugins' PodGroup) come before the
	// scheduler, as helm install applies them.
	if err := installCRDs(ctx, objs); err != nil {
		fmt.Fprintln(os.Stderr, "install the chart's CRDs:", err)
		return 1
	}
	process, err := chartSchedulerProcess(objs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "render the chart for this API server:", err)
		return 1
	}
	process.Log = logFile
	sched, err := cp.StartSchedulerProcess(ctx, binary, process)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start hami-scheduler:", err)
		return 1
	}
	defer sched.Stop()
	return m.Run()
}

// schedulerFor is the build of the band that serves API server minor
// 1.m, or the newest build (and wantRefusal set) when none does.
func schedulerFor(m int) string {
	band, ok := kubeversion.BandFor(m)
	if !ok {
		wantRefusal = true
		band = kubeversion.Bands[0]
	}
	if band == kubeversion.Bands[0] {
		return filepath.Join(*binDir, "hami-scheduler")
	}
	return filepath.Join(*binDir, fmt.Sprintf("hami-scheduler-1.%d", band.Minor))
}

// chartObjects are the chart's objects rendered for the API server's
// capabilities.
func chartObjects() ([]*unstructured.Unstructured, error) {
	caps, err := manifestgen.ServerCapabilities(controlPlane.Client.Discovery())
	if err != nil {
		return nil, err
	}
	rendered, err := manifestgen.RenderFor(filepath.Join(manifestgen.RepoRoot(), manifestgen.ChartPath), manifestgen.Namespace, nil, caps)
	if err != nil {
		return nil, err
	}
	return manifestgen.Decode(manifestgen.Documents(rendered))
}

// installCRDs creates the chart's CustomResourceDefinitions and waits until
// the API server serves them.
func installCRDs(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		crd := new(apiextensionsv1.CustomResourceDefinition)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, crd); err != nil {
			return err
		}
		if err := localcluster.CreateCRD(ctx, controlPlane.Config, crd); err != nil {
			return err
		}
		fmt.Printf("compat: installed CRD %s\n", crd.Name)
	}
	return nil
}

// chartSchedulerProcess is the hami-scheduler Deployment and configuration
// of the chart's objects.
func chartSchedulerProcess(objs []*unstructured.Unstructured) (localcluster.SchedulerProcessOptions, error) {
	var opts localcluster.SchedulerProcessOptions
	for _, o := range objs {
		switch {
		case o.GetKind() == "Deployment" && o.GetName() == "hami-scheduler":
			opts.Deployment = new(appsv1.Deployment)
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, opts.Deployment); err != nil {
				return opts, err
			}
		case o.GetKind() == "ConfigMap" && o.GetName() == "hami-scheduler-config":
			config, _, _ := unstructured.NestedString(o.Object, "data", "scheduler-config.yaml")
			opts.Config = []byte(config)
		}
	}
	if opts.Deployment == nil || opts.Config == nil {
		return opts, fmt.Errorf("the chart renders no hami-scheduler Deployment and ConfigMap hami-scheduler-config")
	}
	return opts, nil
}

// binaryVersion is what the binary's --version prints.
func binaryVersion(binary string) (string, error) {
	out, err := execOutput(binary, "--version")
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", binary, err)
	}
	return strings.TrimSpace(out), nil
}

// needsCluster skips a test of the running suite when the binaries were
// not given or the suite checks a refusal only.
func needsCluster(t *testing.T) {
	t.Helper()
	if controlPlane == nil {
		t.Skip("no -kube-apiserver and -bin: run make test-compat")
	}
	if wantRefusal {
		t.Skipf("no band serves Kubernetes %s: the suite checks the refusal only", serverVersion)
	}
}
