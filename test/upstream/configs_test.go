//go:build upstream

package upstream

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/hami-scheduler/hami-scheduler/manifests"
	"github.com/hami-scheduler/hami-scheduler/plugins"
)

// variant is one profile a test case runs with.
type variant string

const (
	// withHAMi is hami-scheduler's shipped profile.
	withHAMi variant = "hami"
	// withoutHAMi is the same profile without the HAMi plugin: kube-scheduler
	// with the rest of the shipped configuration (Coscheduling, its queue
	// order, every node scored, the ignored device resources).
	withoutHAMi variant = "plain"
)

type object = map[string]any

// schedulerConfig returns the KubeSchedulerConfiguration (YAML) a test case
// runs with in the variant: the shipped profile once for each profile of
// the case's own configuration (upstream, nil for none: one profile,
// default-scheduler), named as it, with its plugin sets and plugin args
// merged in (the case's win over the shipped ones), and its other
// top-level settings kept.
func schedulerConfig(upstream []byte, v variant) ([]byte, error) {
	var shipped object
	if err := yaml.Unmarshal(manifests.SchedulerConfigYAML, &shipped); err != nil {
		return nil, fmt.Errorf("manifests/scheduler-config.yaml: %w", err)
	}
	shippedProfiles, _ := shipped["profiles"].([]any)
	if len(shippedProfiles) != 1 {
		return nil, fmt.Errorf("manifests/scheduler-config.yaml: want one profile, got %d", len(shippedProfiles))
	}
	base, _ := shippedProfiles[0].(object)
	own := object{"profiles": []any{object{"schedulerName": "default-scheduler"}}}
	if upstream != nil {
		own = object{}
		if err := yaml.Unmarshal(upstream, &own); err != nil {
			return nil, err
		}
	}
	out := object{"apiVersion": shipped["apiVersion"], "kind": shipped["kind"]}
	for k, val := range own {
		if k != "profiles" && k != "apiVersion" && k != "kind" {
			out[k] = val
		}
	}
	ownProfiles, _ := own["profiles"].([]any)
	if len(ownProfiles) == 0 {
		ownProfiles = []any{object{"schedulerName": "default-scheduler"}}
	}
	var profiles []any
	for _, op := range ownProfiles {
		p, err := mergedProfile(base, op.(object), v)
		if err != nil {
			return nil, err
		}
		profiles = append(profiles, p)
	}
	out["profiles"] = profiles
	return yaml.Marshal(out)
}

// mergedProfile is the shipped profile (base) named and extended as the
// case's profile (own) says, without HAMi in the plain variant.
func mergedProfile(base, own object, v variant) (object, error) {
	p, err := deepCopy(base)
	if err != nil {
		return nil, err
	}
	name, _ := own["schedulerName"].(string)
	if name == "" {
		name = "default-scheduler"
	}
	p["schedulerName"] = name
	if pct, ok := own["percentageOfNodesToScore"]; ok {
		p["percentageOfNodesToScore"] = pct
	}
	sets, _ := p["plugins"].(object)
	if sets == nil {
		sets = object{}
		p["plugins"] = sets
	}
	ownPlugins, _ := own["plugins"].(object)
	for point, set := range ownPlugins {
		mine, _ := sets[point].(object)
		if mine == nil {
			mine = object{}
			sets[point] = mine
		}
		for _, list := range []string{"enabled", "disabled"} {
			add, _ := set.(object)[list].([]any)
			have, _ := mine[list].([]any)
			mine[list] = append(have, add...)
		}
	}
	configs, _ := p["pluginConfig"].([]any)
	for _, oc := range asList(own["pluginConfig"]) {
		name := oc.(object)["name"]
		configs = slices.DeleteFunc(configs, func(c any) bool { return c.(object)["name"] == name })
		configs = append(configs, oc)
	}
	if v == withoutHAMi {
		configs = slices.DeleteFunc(configs, func(c any) bool { return c.(object)["name"] == plugins.Name })
		for _, set := range sets {
			s, _ := set.(object)
			if s == nil {
				continue
			}
			s["enabled"] = slices.DeleteFunc(asList(s["enabled"]), func(e any) bool { return e.(object)["name"] == plugins.Name })
		}
	}
	p["pluginConfig"] = configs
	return p, nil
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func deepCopy(o object) (object, error) {
	data, err := yaml.Marshal(o)
	if err != nil {
		return nil, err
	}
	var c object
	return c, yaml.Unmarshal(data, &c)
}

// writeCases writes the topic's test cases (the YAML in topicDir) for the
// variant into dir and returns the file: every relative path made
// absolute (templates stay where upstream has them), and each case's
// scheduler configuration replaced by the variant's (schedulerConfig), and
// its measured op profiled (profileMeasuredOp).
func writeCases(topicDir, dir, topic string, v variant) (string, error) {
	data, err := os.ReadFile(filepath.Join(topicDir, "performance-config.yaml"))
	if err != nil {
		return "", err
	}
	var cases []any
	if err := yaml.Unmarshal(data, &cases); err != nil {
		return "", fmt.Errorf("%s: %w", topicDir, err)
	}
	for i, c := range cases {
		tc, ok := c.(object)
		if !ok {
			return "", fmt.Errorf("%s: test case %d is not an object", topicDir, i)
		}
		var own []byte
		if path, _ := tc["schedulerConfigPath"].(string); path != "" {
			if own, err = os.ReadFile(filepath.Join(topicDir, path)); err != nil {
				return "", err
			}
		}
		cfg, err := schedulerConfig(own, v)
		if err != nil {
			return "", fmt.Errorf("%s: %v: %w", topicDir, tc["name"], err)
		}
		cfgPath := filepath.Join(dir, fmt.Sprintf("scheduler-config-%s-%d-%s.yaml", topic, i, v))
		if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
			return "", err
		}
		absolutePaths(tc, topicDir)
		tc["schedulerConfigPath"] = cfgPath
		name, _ := tc["name"].(string)
		profileMeasuredOp(tc, strings.Join([]string{topic, string(v), name}, "/"))
		// Upstream's floors (e.g. SchedulingBasic's 680 pods/s) are for
		// its CI machines and kube-scheduler's default profile, which
		// scores a sample of a large cluster's nodes; the figures here are
		// compared side by side instead.
		for _, w := range asList(tc["workloads"]) {
			if wo, ok := w.(object); ok {
				delete(wo, "threshold")
			}
		}
	}
	out, err := yaml.Marshal(cases)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("performance-config-%s-%s.yaml", topic, v))
	return path, os.WriteFile(path, out, 0o644)
}

// absolutePaths rewrites, at any depth, the relative paths (keys ending in
// Path, and the lists of keys ending in Paths, e.g. churn's templatePaths)
// as paths under dir.
func absolutePaths(v any, dir string) {
	switch t := v.(type) {
	case object:
		for k, val := range t {
			switch {
			case strings.HasSuffix(k, "Path"):
				if s, ok := val.(string); ok {
					t[k] = absolute(s, dir)
					continue
				}
			case strings.HasSuffix(k, "Paths"):
				if l, ok := val.([]any); ok {
					for i, e := range l {
						if s, ok := e.(string); ok {
							l[i] = absolute(s, dir)
						}
					}
					continue
				}
			}
			absolutePaths(val, dir)
		}
	case []any:
		for _, e := range t {
			absolutePaths(e, dir)
		}
	}
}

// absolute is path under dir unless it is empty or absolute already.
func absolute(path, dir string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}
