// Package manifestgen renders the Helm chart manifests/charts/hami-scheduler
// with Helm's Go library (no helm binary) and derives the kustomize tree
// manifests/ from it: the chart is the single source of both.
//
// `make manifests` (hack/render-manifests) writes the files; the tests in
// test/e2e check that they are up to date, that `kustomize build manifests/`
// equals the chart's objects, and apply both to a real API server.
//
// Only the rendering packages of Helm are imported (chart loader, chartutil,
// engine), and only by the generator and the tests: the shipped binaries do
// not link Helm.
package manifestgen

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	corev1 "k8s.io/api/core/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/hami-scheduler/hami-scheduler/internal/kubeversion"
)

// Namespace is the release namespace the kustomize tree is rendered for.
const Namespace = "hami-system"

// ReleaseName is the release name the kustomize tree is rendered for.
const ReleaseName = "hami-scheduler"

// ChartPath is the chart's directory, relative to the repository root.
const ChartPath = "manifests/charts/hami-scheduler"

// RepoRoot is the repository root, found from this source file.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Render renders the chart in chartDir for a release in namespace, with
// values over the chart's values.yaml. It returns the non-empty output of
// each template, keyed by the template's path in the chart
// ("templates/webhook.yaml").
// It renders for a cluster of the newest band's minor (KubeCapabilities),
// as the kustomize tree is.
func Render(chartDir, namespace string, values map[string]any) (map[string]string, error) {
	return RenderFor(chartDir, namespace, values, KubeCapabilities(kubeversion.Bands[0].Minor))
}

// KubeCapabilities are those of a cluster of Kubernetes v1.<minor>.0 that
// serves what this module's client-go knows: Helm's default API versions
// (group/version only) and each known group/version/Kind, as a live
// server's discovery gives them (ServerCapabilities).
func KubeCapabilities(minor int) *chartutil.Capabilities {
	caps := *chartutil.DefaultCapabilities
	caps.KubeVersion = chartutil.KubeVersion{Version: fmt.Sprintf("v1.%d.0", minor), Major: "1", Minor: strconv.Itoa(minor)}
	versions := append(chartutil.VersionSet(nil), caps.APIVersions...)
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version != kruntime.APIVersionInternal && !strings.HasSuffix(gvk.Kind, "List") && !strings.HasSuffix(gvk.Kind, "Options") {
			versions = append(versions, gvk.GroupVersion().String()+"/"+gvk.Kind)
		}
	}
	sort.Strings(versions)
	caps.APIVersions = versions
	return &caps
}

// ServerCapabilities are the capabilities of a live API server, as helm
// install reads them: its version, and every group/version and
// group/version/Kind it serves.
func ServerCapabilities(client discovery.DiscoveryInterface) (*chartutil.Capabilities, error) {
	info, err := client.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("server version: %w", err)
	}
	_, lists, err := client.ServerGroupsAndResources()
	if err != nil {
		return nil, fmt.Errorf("server resources: %w", err)
	}
	var versions []string
	for _, list := range lists {
		versions = append(versions, list.GroupVersion)
		for _, r := range list.APIResources {
			versions = append(versions, list.GroupVersion+"/"+r.Kind)
		}
	}
	caps := *chartutil.DefaultCapabilities
	caps.KubeVersion = chartutil.KubeVersion{Version: info.GitVersion, Major: info.Major, Minor: info.Minor}
	caps.APIVersions = chartutil.VersionSet(versions)
	return &caps, nil
}

// RenderFor renders as Render does, for a cluster of the given capabilities
// (a live server's: ServerCapabilities).
func RenderFor(chartDir, namespace string, values map[string]any, caps *chartutil.Capabilities) (map[string]string, error) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", chartDir, err)
	}
	// As helm install checks it.
	if c := chrt.Metadata.KubeVersion; c != "" && !chartutil.IsCompatibleRange(c, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", c, caps.KubeVersion.String())
	}
	if values == nil {
		values = map[string]any{}
	}
	if err := chartutil.ProcessDependenciesWithMerge(chrt, values); err != nil {
		return nil, err
	}
	vals, err := chartutil.ToRenderValues(chrt, values, chartutil.ReleaseOptions{
		Name: ReleaseName, Namespace: namespace, Revision: 1, IsInstall: true,
	}, caps)
	if err != nil {
		return nil, fmt.Errorf("chart values: %w", err)
	}
	rendered, err := engine.Engine{Strict: true}.Render(chrt, vals)
	if err != nil {
		return nil, fmt.Errorf("render chart: %w", err)
	}
	out := map[string]string{}
	prefix := chrt.Name() + "/"
	for name, text := range rendered {
		if path.Ext(name) != ".yaml" || strings.TrimSpace(text) == "" {
			continue
		}
		out[strings.TrimPrefix(name, prefix)] = text
	}
	return out, nil
}

// HAMiValuesFile is test/testdata/hami-values.yaml, relative to the
// repository root: a HAMi v2.10 user's values (HAMi's keys), which the
// tests render and install through this chart.
const HAMiValuesFile = "test/testdata/hami-values.yaml"

// BesideHAMiValuesFile is the chart's values-beside-hami.yaml, relative to
// the repository root: the values that install the chart beside HAMi's own
// release, as `kubectl hami switch` needs it (docs/switching.md).
const BesideHAMiValuesFile = ChartPath + "/values-beside-hami.yaml"

// ReadValues reads a values file, as helm's --values does.
func ReadValues(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	values := map[string]any{}
	if err := yaml.Unmarshal(data, &values); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return values, nil
}

// Documents splits rendered templates into their YAML documents, in the
// order of the template names, skipping empty ones.
func Documents(rendered map[string]string) []string {
	names := make([]string, 0, len(rendered))
	for name := range rendered {
		names = append(names, name)
	}
	sort.Strings(names)
	var docs []string
	for _, name := range names {
		for _, doc := range strings.Split("\n"+rendered[name], "\n---") {
			if isEmptyDocument(doc) {
				continue
			}
			docs = append(docs, doc)
		}
	}
	return docs
}

// isEmptyDocument reports whether a YAML document holds only comments and
// blank lines.
func isEmptyDocument(doc string) bool {
	for _, line := range strings.Split(doc, "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			return false
		}
	}
	return true
}

// header starts every generated file of the kustomize tree.
const header = "# Generated from " + ChartPath + "/%s by `make manifests`\n" +
	"# (hack/render-manifests): edit the chart, not this file.\n"

// KustomizeFiles renders the chart in root's ChartPath with its default
// values for the release namespace Namespace and returns the generated files
// of the kustomize tree, keyed by their path relative to manifests/: one
// file per template, and scheduler-config.yaml, the configuration the
// ConfigMap hami-scheduler-config carries (kustomization.yaml generates
// that ConfigMap from it, and the Go code embeds it).
func KustomizeFiles(root string) (map[string][]byte, error) {
	rendered, err := Render(filepath.Join(root, ChartPath), Namespace, nil)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for name, text := range rendered {
		base := path.Base(name)
		if name == "templates/scheduler-config.yaml" {
			var cm corev1.ConfigMap
			if err := yaml.UnmarshalStrict([]byte(text), &cm); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			config, ok := cm.Data["scheduler-config.yaml"]
			if !ok {
				return nil, fmt.Errorf("%s: no key scheduler-config.yaml", name)
			}
			// No header: kustomize makes the ConfigMap from this file,
			// which must be the chart's ConfigMap data (that says where it
			// comes from).
			files[base] = []byte(config)
			continue
		}
		files[base] = []byte(fmt.Sprintf(header, name) + strings.TrimLeft(text, "\n"))
	}
	return files, nil
}
