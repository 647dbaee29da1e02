package main

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	configv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
)

// chartDefault is HAMi v2.10.0's chart-rendered device-config.yaml,
// relative to this package (tests run in it).
const chartDefault = "../../test/testdata/device-config.yaml"

const header = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
`

// profile is a hami-scheduler profile enabling HAMi, with args (an
// indented "args:" block, or "") as the HAMi pluginConfig.
func profile(name, args string) string {
	s := `- schedulerName: ` + name + `
  plugins:
    multiPoint:
      enabled:
      - name: HAMi
`
	if args != "" {
		s += "  pluginConfig:\n  - name: HAMi\n    args:\n"
		for line := range strings.SplitSeq(strings.TrimRight(args, "\n"), "\n") {
			s += "      " + line + "\n"
		}
	}
	return s
}

func writeFile(t *testing.T, name, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// run executes the hami-scheduler command on args with its RunE replaced:
// the check must decide before anything would start, and nothing here
// needs or reaches an API server. ran says whether RunE was reached.
func run(t *testing.T, args ...string) (ran bool, err error) {
	t.Helper()
	err = execute(func(*cobra.Command) error {
		ran = true
		return nil
	}, args...)
	return ran, err
}

// execute runs the hami-scheduler command on args with runE in place of
// its RunE, its output discarded.
func execute(runE func(*cobra.Command) error, args ...string) error {
	cmd := newCommand()
	cmd.RunE = func(c *cobra.Command, _ []string) error { return runE(c) }
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	return cmd.Execute()
}

// TestConfigCheck runs the command with --config files: bad HAMi args
// fail before the scheduler would run, with every field path.
func TestConfigCheck(t *testing.T) {
	emptyDeviceConfig := writeFile(t, "empty.yaml", "foo: 1\n")
	badDeviceConfig := writeFile(t, "bad.yaml", "nvidia:\n  resourceCountName: nvidia.com/gpu\n  defaultCores: 150\n")
	iluvatarOnly := writeFile(t, "iluvatar.yaml", "iluvatars:\n- {commonWord: BI-V150, resourceCountName: iluvatar.ai/BI-V150-vgpu}\n")

	tests := []struct {
		name   string
		env    string
		config string
		// wantFields are the field paths of a *configError, in order;
		// wantText are substrings of the error. Neither: no error.
		wantFields []string
		wantText   []string
	}{{
		name:     "unknown HAMi arg",
		config:   header + "profiles:\n" + profile("hami-scheduler", "nodeSchedulerPolcy: spread\n"),
		wantText: []string{"decoding .profiles[0].pluginConfig[0]", "decoding args for plugin HAMi", `unknown field "nodeSchedulerPolcy"`},
	}, {
		name:       "invalid policy",
		config:     header + "profiles:\n" + profile("hami-scheduler", "nodeSchedulerPolicy: fastest\n"),
		wantFields: []string{"profiles[0].pluginConfig[0].args.nodeSchedulerPolicy"},
		wantText:   []string{`profiles[0].pluginConfig[0].args.nodeSchedulerPolicy: Unsupported value: "fastest": supported values: "binpack", "spread"`},
	}, {
		name:       "missing deviceConfigFile",
		config:     header + "profiles:\n" + profile("hami-scheduler", "deviceConfigFile: /nonexistent/device-config.yaml\n"),
		wantFields: []string{"profiles[0].pluginConfig[0].args.deviceConfigFile"},
		wantText:   []string{`args.deviceConfigFile: Invalid value: "/nonexistent/device-config.yaml": device config /nonexistent/device-config.yaml: read device config: open /nonexistent/device-config.yaml: no such file or directory`},
	}, {
		name:       "deviceConfigFile with every section empty",
		config:     header + "profiles:\n" + profile("hami-scheduler", "deviceConfigFile: "+emptyDeviceConfig+"\n"),
		wantFields: []string{"profiles[0].pluginConfig[0].args.deviceConfigFile"},
		wantText:   []string{"every section is empty"},
	}, {
		name:       "deviceConfigFile with an invalid setting",
		config:     header + "profiles:\n" + profile("hami-scheduler", "deviceConfigFile: "+badDeviceConfig+"\n"),
		wantFields: []string{"profiles[0].pluginConfig[0].args.deviceConfigFile"},
		wantText:   []string{"nvidia.defaultCores: Invalid value: 150"},
	}, {
		name:       "deviceConfigFile enabling no vendor of this build",
		config:     header + "profiles:\n" + profile("hami-scheduler", "deviceConfigFile: "+iluvatarOnly+"\n"),
		wantFields: []string{"profiles[0].pluginConfig[0].args.deviceConfigFile"},
		wantText:   []string{"enables no vendor this build supports", "configured: iluvatars[BI-V150] (needs enableIluvatar)"},
	}, {
		name:       "unknown vendor, reported once",
		config:     header + "profiles:\n" + profile("hami-scheduler", "vendors:\n- name: nosuchvendor\n"),
		wantFields: []string{"profiles[0].pluginConfig[0].args.vendors[0].name"},
	}, {
		name:       "vendors beside deviceConfigFile, the file checked too",
		config:     header + "profiles:\n" + profile("hami-scheduler", "deviceConfigFile: /nonexistent.yaml\nvendors:\n- name: nvidia\n"),
		wantFields: []string{"profiles[0].pluginConfig[0].args.vendors", "profiles[0].pluginConfig[0].args.deviceConfigFile"},
	}, {
		name: "every HAMi pluginConfig of every profile",
		config: header + "profiles:\n" + profile("default-scheduler", "") + profile("hami-scheduler", "") +
			"  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: MostAllocated\n" +
			"  - name: HAMi\n    args:\n      gpuSchedulerPolicy: mutex\n      nodeLockWait: -1s\n      vendors:\n      - name: nvidia\n        defaultCores: 101\n",
		wantFields: []string{
			"profiles[1].pluginConfig[1].args.gpuSchedulerPolicy",
			"profiles[1].pluginConfig[1].args.nodeLockWait",
			"profiles[1].pluginConfig[1].args.vendors[0].defaultCores",
		},
	}, {
		name:       "bad HAMI_NODELOCK_EXPIRE without nodeLockExpiry",
		env:        "soon",
		config:     header + "profiles:\n" + profile("hami-scheduler", "nodeLockWait: 10s\n"),
		wantFields: []string{"profiles[0].pluginConfig[0].args.nodeLockExpiry"},
		wantText:   []string{configv1.NodeLockExpiryEnv},
	}, {
		name:     "bad HAMI_NODELOCK_EXPIRE, HAMi args added by kube-scheduler's defaults",
		env:      "soon",
		config:   header + "profiles:\n" + profile("hami-scheduler", ""),
		wantText: []string{"].args.nodeLockExpiry: Invalid value: \"soon\""},
	}, {
		name:   "bad HAMI_NODELOCK_EXPIRE with nodeLockExpiry",
		env:    "soon",
		config: header + "profiles:\n" + profile("hami-scheduler", "nodeLockExpiry: 2m\n"),
	}, {
		name:   "HAMi's chart-default device config",
		config: header + "profiles:\n" + profile("hami-scheduler", "deviceConfigFile: "+chartDefault+"\n"),
	}, {
		name:   "HAMi's defaults (no pluginConfig)",
		config: header + "profiles:\n" + profile("hami-scheduler", ""),
	}, {
		name:   "every setting",
		config: header + "profiles:\n" + profile("hami-scheduler", "nodeSchedulerPolicy: spread\ngpuSchedulerPolicy: binpack\nnodeLockExpiry: 1m\nnodeLockWait: 10s\nvendors:\n- name: nvidia\n  defaultCores: 20\n  defaultCount: 0\n"),
	}, {
		name:   "no HAMi profile",
		config: header + "profiles:\n- schedulerName: default-scheduler\n",
	}, {
		name: "Coscheduling args",
		config: header + "profiles:\n" + profile("hami-scheduler", "nodeLockWait: 10s\n") +
			"  - name: Coscheduling\n    args:\n      permitWaitingTimeSeconds: -1\n      podGroupRejectPercentage: 150\n",
		wantFields: []string{
			"profiles[0].pluginConfig[1].args.permitWaitingTimeSeconds",
			"profiles[0].pluginConfig[1].args.podGroupRejectPercentage",
		},
		wantText: []string{"must be between 0 and 100"},
	}, {
		name:     "unknown Coscheduling arg",
		config:   header + "profiles:\n" + profile("hami-scheduler", "nodeLockWait: 10s\n") + "  - name: Coscheduling\n    args:\n      permitWaitingTime: 10\n",
		wantText: []string{"decoding args for plugin Coscheduling", `unknown field "permitWaitingTime"`},
	}, {
		name:   "scheduler-plugins' Coscheduling args",
		config: header + "profiles:\n" + profile("hami-scheduler", "nodeLockWait: 10s\n") + "  - name: Coscheduling\n    args:\n      permitWaitingTimeSeconds: 10\n      podGroupBackoffSeconds: 30\n",
	}, {
		name:     "not a configuration",
		config:   "profiles: [\n",
		wantText: []string{"config file "},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(configv1.NodeLockExpiryEnv, tt.env)
			file := writeFile(t, "config.yaml", tt.config)
			ran, err := run(t, "--config", file)
			if len(tt.wantFields) == 0 && len(tt.wantText) == 0 {
				if err != nil {
					t.Fatalf("error: %v", err)
				}
				if !ran {
					t.Error("the scheduler would not have run")
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			if ran {
				t.Error("the scheduler would have run despite the error")
			}
			for _, s := range tt.wantText {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			if tt.wantFields == nil {
				return
			}
			var cerr *configError
			if !errors.As(err, &cerr) {
				t.Fatalf("error %v is not a *configError", err)
			}
			var fields []string
			for _, e := range cerr.errs {
				fields = append(fields, e.Field)
				if !strings.Contains(err.Error(), e.Error()) {
					t.Errorf("error text lacks %q", e.Error())
				}
			}
			if diff := cmp.Diff(tt.wantFields, fields); diff != "" {
				t.Errorf("field paths (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfigCheckMissingFile(t *testing.T) {
	ran, err := run(t, "--config", filepath.Join(t.TempDir(), "missing.yaml"))
	if err == nil || !strings.Contains(err.Error(), "missing.yaml") || ran {
		t.Errorf("ran %v, error %v; want an error naming the file", ran, err)
	}
}

func TestNoConfigFlag(t *testing.T) {
	ran, err := run(t)
	if err != nil || !ran {
		t.Errorf("ran %v, error %v; want no check and the scheduler run", ran, err)
	}
}

// TestPreRunHooksOnly is the check on its own, as a kubeconfig-less
// command would run it: flags parsed, the pre-run hooks called, nothing
// else.
func TestPreRunHooksOnly(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    string
		wantErr string
	}{
		{"HAMi's chart-default device config passes", "deviceConfigFile: " + chartDefault + "\n", ""},
		{"a bad policy fails", "gpuSchedulerPolicy: fastest\n", "profiles[0].pluginConfig[0].args.gpuSchedulerPolicy: Unsupported value"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(configv1.NodeLockExpiryEnv, "")
			cmd := newCommand()
			file := writeFile(t, "config.yaml", header+"profiles:\n"+profile("hami-scheduler", tt.args))
			if err := cmd.ParseFlags([]string{"--config", file}); err != nil {
				t.Fatal(err)
			}
			err := cmd.PersistentPreRunE(cmd, nil)
			if err == nil {
				err = cmd.PreRunE(cmd, nil)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("pre-run hooks: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("pre-run hooks' error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestConfigCheckRunsFirst: a command's own pre-run hooks (where
// hami-scheduler reads the API server's version and kube-scheduler sets
// its feature gates) still run, after the check and only if it passes.
func TestConfigCheckRunsFirst(t *testing.T) {
	good := writeFile(t, "good.yaml", header+"profiles:\n"+profile("hami-scheduler", ""))
	bad := writeFile(t, "bad.yaml", header+"profiles:\n"+profile("hami-scheduler", "nodeSchedulerPolicy: fastest\n"))
	for _, tt := range []struct {
		file       string
		wantCalled bool
	}{{good, true}, {bad, false}} {
		var called []string
		cmd := &cobra.Command{
			PersistentPreRunE: func(*cobra.Command, []string) error { called = append(called, "PersistentPreRunE"); return nil },
			PreRunE:           func(*cobra.Command, []string) error { called = append(called, "PreRunE"); return nil },
			RunE:              func(*cobra.Command, []string) error { return nil },
		}
		cmd.Flags().String("config", "", "")
		cmd = withConfigCheck(cmd)
		cmd.SetArgs([]string{"--config", tt.file})
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		err := cmd.Execute()
		var want []string
		if tt.wantCalled {
			want = []string{"PersistentPreRunE", "PreRunE"}
		}
		if diff := cmp.Diff(want, called); diff != "" || (err == nil) != tt.wantCalled {
			t.Errorf("%s: error %v; own hooks called (-want +got):\n%s", filepath.Base(tt.file), err, diff)
		}
	}
}

// TestMetricsListener: --hami-metrics-bind-address serves the metrics
// registry, HAMi's metrics included, over plain HTTP before the scheduler
// runs; a bad address fails the command before it would.
func TestMetricsListener(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var body string
	cmd := newCommand()
	cmd.RunE = func(*cobra.Command, []string) error {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		body = string(data)
		return err
	}
	cmd.SetArgs([]string{"--" + metricsBindFlag, addr})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, "# TYPE hami_build_info gauge") {
		t.Errorf("/metrics on %s has no hami_build_info:\n%.2000s", addr, body)
	}

	ran, err := run(t, "--"+metricsBindFlag, "256.0.0.1:bad")
	if ran || err == nil || !strings.Contains(err.Error(), metricsBindFlag) {
		t.Errorf("bad address: ran %v, err %v; want an error naming the flag before the scheduler runs", ran, err)
	}
}

// TestMetricsFlagInHelp: the flag is listed in --help, after
// kube-scheduler's sections.
func TestMetricsFlagInHelp(t *testing.T) {
	cmd := newCommand()
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "HAMi flags:") || !strings.Contains(out.String(), "--"+metricsBindFlag) {
		t.Errorf("--help does not list --%s", metricsBindFlag)
	}
}
