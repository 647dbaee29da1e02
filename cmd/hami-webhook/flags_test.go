package main

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/webhook"
)

func TestFlags(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	renamed := file("renamed.yaml", "vendors:\n- name: nvidia\n  resourceCountName: example.com/vgpu\n  defaultMemoryMiB: 2048\n")
	unknownField := file("unknown.yaml", "vendors:\n- name: nvidia\n  defaultMemory: 2048\n")
	unknownVendor := file("vendor.yaml", "vendors:\n- name: voodoo\n")
	badCores := file("cores.yaml", "vendors:\n- name: nvidia\n  defaultCores: 101\n")
	admission := file("admission.yaml", "vendors:\n- name: nvidia\n  runtimeClassName: nvidia\n  overwriteEnv: true\n  corePolicy: force\n  memoryFactor: 1024\n")
	badPolicy := file("policy.yaml", "vendors:\n- name: nvidia\n  corePolicy: forced\n")
	hamiConfig := file("device-config.yaml", "nvidia:\n  resourceCountName: example.com/gpu\n  resourceMemoryName: example.com/gpumem\n"+
		"  defaultGPUNum: 1\n  overwriteEnv: true\nhygon:\n  resourceCountName: hygon.com/dcunum\n")
	ascendConfig := file("ascend-config.yaml", "nvidia:\n  resourceCountName: nvidia.com/gpu\nvnpus:\n  configs:\n"+
		"  - {commonWord: Ascend910B3, resourceName: huawei.com/Ascend910B3, memoryAllocatable: 65536, memoryCapacity: 65536}\n")
	badHAMiConfig := file("bad-device-config.yaml", "nvidia:\n  resourceCountName: nvidia.com/gpu\n  gpuCorePolicy: sometimes\n")

	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, o webhook.Options)
		err   string
	}{
		{
			name: "defaults",
			check: func(t *testing.T, o webhook.Options) {
				if o.SchedulerName != "hami-scheduler" || !o.TakeOverDefaultScheduler {
					t.Errorf("scheduler %q take-over %v", o.SchedulerName, o.TakeOverDefaultScheduler)
				}
				if o.Server.Addr != ":9443" || o.Server.CertDir != "/etc/hami-webhook/certs" || o.Server.CertName != "tls.crt" || o.Server.KeyName != "tls.key" {
					t.Errorf("server %+v", o.Server)
				}
				if o.Server.ReadTimeout != 10*time.Second || o.Server.WriteTimeout != 10*time.Second || o.Server.MaxRequestBytes != 4<<20 {
					t.Errorf("limits %+v", o.Server)
				}
				if o.HealthProbeAddr != ":8081" || o.MetricsAddr != ":8443" || !o.MetricsSecure || o.MetricsCertDir != "" {
					t.Errorf("probes %q metrics %q secure %v in %q", o.HealthProbeAddr, o.MetricsAddr, o.MetricsSecure, o.MetricsCertDir)
				}
				if names := o.Registry.Vendors()[0].Resources(); names.Count != "nvidia.com/gpu" {
					t.Errorf("vendor resources %+v", names)
				}
			},
		},
		{
			name: "everything set",
			args: []string{"--scheduler-name=gpu-scheduler", "--take-over-default-scheduler=false", "--bind-address=127.0.0.1:8443",
				"--cert-dir=/certs", "--tls-cert-file-name=c.pem", "--tls-private-key-file-name=k.pem", "--read-timeout=3s",
				"--write-timeout=4s", "--max-request-bytes=1000", "--health-probe-bind-address=:9000", "--metrics-bind-address=0",
				"--metrics-secure=false", "--metrics-cert-dir=/metrics-certs"},
			check: func(t *testing.T, o webhook.Options) {
				want := webhook.ServerOptions{Addr: "127.0.0.1:8443", CertDir: "/certs", CertName: "c.pem", KeyName: "k.pem",
					ReadTimeout: 3 * time.Second, WriteTimeout: 4 * time.Second, MaxRequestBytes: 1000}
				if o.SchedulerName != "gpu-scheduler" || o.TakeOverDefaultScheduler || o.Server != want || o.HealthProbeAddr != ":9000" || o.MetricsAddr != "0" ||
					o.MetricsSecure || o.MetricsCertDir != "/metrics-certs" {
					t.Errorf("options %+v", o)
				}
			},
		},
		{
			name: "vendor config renames resources and sets defaults",
			args: []string{"--vendor-config=" + renamed},
			check: func(t *testing.T, o webhook.Options) {
				v := o.Registry.Vendors()[0]
				if v.Resources().Count != "example.com/vgpu" {
					t.Errorf("count resource %q", v.Resources().Count)
				}
				pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{"example.com/vgpu": *resourceQuantity(1)},
				}}}}}
				req, err := v.ParsePod(pod)
				if err != nil || req.Containers[0].MemoryMiB != 2048 {
					t.Errorf("default memory not applied: %+v %v", req, err)
				}
			},
		},
		{
			name: "vendor config carries HAMi's webhook settings to the vendor",
			args: []string{"--vendor-config=" + admission},
			check: func(t *testing.T, o webhook.Options) {
				v := o.Registry.Vendors()[0]
				if rc, ok := v.(devices.RuntimeClassVendor); !ok || rc.RuntimeClassName() != "nvidia" {
					t.Errorf("runtimeClassName not applied")
				}
				if ms, ok := v.(devices.MemoryScaler); !ok || ms.MemoryFactor() != 1024 {
					t.Errorf("memoryFactor not applied")
				}
				c := &corev1.Container{Name: "sidecar"}
				if asks, err := v.Default(c); err != nil || asks {
					t.Fatalf("Default() = %v, %v", asks, err)
				}
				want := []corev1.EnvVar{{Name: "GPU_CORE_UTILIZATION_POLICY", Value: "force"}, {Name: "NVIDIA_VISIBLE_DEVICES", Value: "none"}}
				if !reflect.DeepEqual(c.Env, want) {
					t.Errorf("env = %v, want %v (corePolicy and overwriteEnv)", c.Env, want)
				}
			},
		},
		{
			name: "HAMi's device config file",
			args: []string{"--device-config-file=" + hamiConfig},
			check: func(t *testing.T, o webhook.Options) {
				if n := len(o.Registry.Vendors()); n != 2 || o.Registry.Vendors()[1].Name() != "DCU" {
					t.Fatalf("%d vendors, want NVIDIA and Hygon", n)
				}
				v := o.Registry.Vendors()[0]
				if v.Resources().Count != "example.com/gpu" || v.Resources().Memory != "example.com/gpumem" {
					t.Errorf("resources %+v, want the device config's", v.Resources())
				}
				c := &corev1.Container{Name: "sidecar"}
				if _, err := v.Default(c); err != nil || len(c.Env) != 1 || c.Env[0].Value != "none" {
					t.Errorf("overwriteEnv from the device config not applied: env %v, err %v", c.Env, err)
				}
			},
		},
		{
			name: "HAMi's device config file with --enable-ascend",
			args: []string{"--device-config-file=" + ascendConfig, "--enable-ascend"},
			check: func(t *testing.T, o webhook.Options) {
				if n := len(o.Registry.Vendors()); n != 2 || o.Registry.Vendors()[1].Name() != "Ascend910B3" {
					t.Fatalf("%d vendors, want NVIDIA and Ascend910B3", n)
				}
			},
		},
		{
			name: "HAMi's device config file without --enable-ascend",
			args: []string{"--device-config-file=" + ascendConfig},
			check: func(t *testing.T, o webhook.Options) {
				if n := len(o.Registry.Vendors()); n != 1 {
					t.Fatalf("%d vendors, want NVIDIA alone", n)
				}
			},
		},
		{name: "bad HAMi device config", args: []string{"--device-config-file=" + badHAMiConfig}, err: `nvidia.gpuCorePolicy: Unsupported value: "sometimes"`},
		{
			name: "self-managed certificates",
			args: []string{"--self-managed-certs", "--cert-secret=ns1/certs", "--cert-dns-name=hook.ns1.svc", "--webhook-configuration=hook"},
			check: func(t *testing.T, o webhook.Options) {
				want := webhook.SelfManagedCerts{SecretNamespace: "ns1", SecretName: "certs", DNSName: "hook.ns1.svc", WebhookConfiguration: "hook"}
				if o.Certificates == nil || !reflect.DeepEqual(*o.Certificates, want) {
					t.Errorf("Certificates = %+v, want %+v", o.Certificates, want)
				}
			},
		},
		{name: "self-managed certificates need namespace/name", args: []string{"--self-managed-certs", "--cert-secret=certs"}, err: "want namespace/name"},
		{name: "both vendor sources", args: []string{"--device-config-file=" + hamiConfig, "--vendor-config=" + renamed}, err: "exclude each other"},
		{name: "unknown core policy", args: []string{"--vendor-config=" + badPolicy}, err: `corePolicy "forced"`},
		{name: "vendor config with an unknown field", args: []string{"--vendor-config=" + unknownField}, err: `unknown field "defaultMemory"`},
		{name: "unknown vendor", args: []string{"--vendor-config=" + unknownVendor}, err: `unknown vendor "voodoo"`},
		{name: "invalid vendor default", args: []string{"--vendor-config=" + badCores}, err: "defaultCores 101 is outside 0-100"},
		{name: "missing vendor config", args: []string{"--vendor-config=" + filepath.Join(dir, "absent.yaml")}, err: "no such file"},
		{name: "default-scheduler as our name", args: []string{"--scheduler-name=default-scheduler"}, err: "must not be default-scheduler"},
		{name: "invalid scheduler name", args: []string{"--scheduler-name=GPU_Scheduler"}, err: "scheduler name GPU_Scheduler"},
		{name: "zero timeout", args: []string{"--read-timeout=0s"}, err: "must be positive"},
		{name: "zero body limit", args: []string{"--max-request-bytes=0"}, err: "must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("hami-webhook", flag.ContinueOnError)
			f := registerFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			o, err := f.options()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, o)
		})
	}
}

func resourceQuantity(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }
