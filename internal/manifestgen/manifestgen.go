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
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
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
func Render(chartDir, namespace string, values map[string]any) (map[string]string, error) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", chartDir, err)
	}
	if values == nil {
		values = map[string]any{}
	}
	if err := chartutil.ProcessDependenciesWithMerge(chrt, values); err != nil {
		return nil, err
	}
	vals, err := chartutil.ToRenderValues(chrt, values, chartutil.ReleaseOptions{
		Name: ReleaseName, Namespace: namespace, Revision: 1, IsInstall: true,
	}, chartutil.DefaultCapabilities)
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
