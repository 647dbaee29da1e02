{{/*
HAMi v2.10's value keys (charts/hami/values.yaml) that this chart reads
with HAMi's meaning but keeps out of its values.yaml: keys that alias one
of ours with another default (HAMi's key wins when given), and the keys
that feed HAMi's device-config.yaml. docs/helm-values.md maps each one.
*/}}

{{/*
The value at a dotted path of .Values, as JSON {"v": value}, or "" when
the path is not given (absent or null). Takes (dict "root" $ "path" "a.b").
*/}}
{{- define "hami-scheduler.given" -}}
{{- $node := .root.Values -}}
{{- $found := true -}}
{{- range splitList "." .path -}}
{{- if and $found (kindIs "map" $node) (hasKey $node .) -}}
{{- $node = index $node . -}}
{{- else -}}
{{- $found = false -}}
{{- end -}}
{{- end -}}
{{- if and $found (not (kindIs "invalid" $node)) -}}
{{ toJson (dict "v" $node) }}
{{- end -}}
{{- end -}}

{{/*
HAMi's keys that set a field of the device-config.yaml its chart renders
(templates/scheduler/device-configmap.yaml): key, then the section and
field, "vnpus.configs" meaning every chip's entry.
*/}}
{{- define "hami-scheduler.hamiDeviceFields" -}}
- [resourceName, nvidia, resourceCountName]
- [resourceMem, nvidia, resourceMemoryName]
- [resourceMemPercentage, nvidia, resourceMemoryPercentageName]
- [resourceCores, nvidia, resourceCoreName]
- [resourcePriority, nvidia, resourcePriorityName]
- [scheduler.overwriteEnv, nvidia, overwriteEnv]
- [scheduler.overwriteEnv, vnpus.configs, overwriteEnv]
- [devicePlugin.runtimeClassName, nvidia, runtimeClassName]
- [devices.nvidia.gpuCorePolicy, nvidia, gpuCorePolicy]
- [devices.nvidia.libCudaLogLevel, nvidia, libCudaLogLevel]
- [mluResourceName, cambricon, resourceCountName]
- [mluResourceMem, cambricon, resourceMemoryName]
- [mluResourceCores, cambricon, resourceCoreName]
- [dcuResourceName, hygon, resourceCountName]
- [dcuResourceMem, hygon, resourceMemoryName]
- [dcuResourceCores, hygon, resourceCoreName]
- [metaxResourceName, metax, resourceVCountName]
- [metaxResourceCore, metax, resourceVCoreName]
- [metaxResourceMem, metax, resourceVMemoryName]
- [metaxsGPUTopologyAware, metax, sgpuTopologyAware]
- [enflameResourceNameDRSGCU, enflame, resourceNameDRSGCU]
- [enflameResourceNameGCUMemory, enflame, resourceNameGCUMemory]
- [enflameResourceNameGCUCore, enflame, resourceNameGCUCore]
- [kunlunResourceName, kunlun, resourceCountName]
- [kunlunResourceVCountName, kunlun, resourceVCountName]
- [kunlunResourceVMemoryName, kunlun, resourceVMemoryName]
- [vastaiResourceName, vastai, resourceCountName]
- [birenResourceName, biren, resourceCountName]
- [devices.ascend.runtimeClassName, vnpus.configs, runtimeClassName]
- [devices.ascend.hamiVnpuCore, vnpus, hamiVnpuCore]
{{- end -}}

{{/*
HAMi's devices.<vendor> switches: the vendor's section of the device
config and the resource domain of its names. HAMi's chart marks a switched
off vendor's resources managed no more (ignoredByScheduler), so that its
extender never sees their pods; here the section is left out (the plugin
and the webhook do not handle the vendor) and NodeResourcesFit checks them.
Ascend and Iluvatar are enableAscend and enableIluvatar instead.
*/}}
{{- define "hami-scheduler.hamiDeviceSwitches" -}}
kunlun: {section: kunlun, domain: kunlunxin.com/}
enflame: {section: enflame, domain: enflame.com/}
mthreads: {section: mthreads, domain: mthreads.com/}
vastai: {section: vastai, domain: vastaitech.com/}
biren: {section: biren, domain: birentech.com/}
ascend: {domain: huawei.com/}
iluvatar: {domain: iluvatar.ai/}
amd: {}
awsneuron: {}
nvidia: {}
{{- end -}}

{{/* HAMi's resource-name keys (each a resource its chart's scheduler manages). */}}
{{- define "hami-scheduler.hamiResourceKeys" -}}
- resourceName
- resourceMem
- resourceMemPercentage
- resourceCores
- resourcePriority
- mluResourceName
- mluResourceMem
- mluResourceCores
- dcuResourceName
- dcuResourceMem
- dcuResourceCores
- metaxResourceName
- metaxResourceCore
- metaxResourceMem
- enflameResourceNameDRSGCU
- enflameResourceNameGCUMemory
- enflameResourceNameGCUCore
- kunlunResourceName
- kunlunResourceVCountName
- kunlunResourceVMemoryName
- vastaiResourceName
- birenResourceName
{{- end -}}

{{/*
The HAMi device keys given, one path a line: the keys that set a field of
HAMi's device-config.yaml, and any devices.* key.
*/}}
{{- define "hami-scheduler.hamiDeviceKeysGiven" -}}
{{- $root := . -}}
{{- $keys := list -}}
{{- range (include "hami-scheduler.hamiDeviceFields" . | fromYamlArray) -}}
{{- if include "hami-scheduler.given" (dict "root" $root "path" (first .)) -}}
{{- $keys = append $keys (first .) -}}
{{- end -}}
{{- end -}}
{{- range $vendor, $settings := (get .Values "devices" | default dict) -}}
{{- if kindIs "map" $settings -}}
{{- range $key, $_ := $settings -}}
{{- $keys = append $keys (printf "devices.%s.%s" $vendor $key) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $keys | uniq | join "\n" -}}
{{- end -}}

{{/* Whether HAMi's devices.<vendor>.enabled is given false. */}}
{{- define "hami-scheduler.hamiDeviceOff" -}}
{{- with include "hami-scheduler.given" (dict "root" .root "path" (printf "devices.%s.enabled" .vendor)) -}}
{{- if not (fromJson .).v }}true{{ end -}}
{{- end -}}
{{- end -}}

{{/* Whether HAMi's devices.<vendor>.enabled is given true. */}}
{{- define "hami-scheduler.hamiDeviceOn" -}}
{{- with include "hami-scheduler.given" (dict "root" .root "path" (printf "devices.%s.enabled" .vendor)) -}}
{{- if (fromJson .).v }}true{{ end -}}
{{- end -}}
{{- end -}}

{{/* The device config's content given as text: deviceConfig.content, or HAMi's device-config.content. */}}
{{- define "hami-scheduler.deviceConfigContent" -}}
{{- $ours := .Values.deviceConfig.content -}}
{{- $hamis := "" -}}
{{- with include "hami-scheduler.given" (dict "root" . "path" "device-config.content") }}{{ $hamis = (fromJson .).v }}{{ end -}}
{{- if and $ours $hamis (ne $ours $hamis) -}}
{{- fail "deviceConfig.content and HAMi's device-config.content are both set and differ: set one" -}}
{{- end -}}
{{- $ours | default $hamis -}}
{{- end -}}

{{/*
Whether the chart renders HAMi's device-config.yaml from HAMi's keys:
deviceConfig.hamiChartDefault, or any HAMi device key given, when no
device config is given otherwise.
*/}}
{{- define "hami-scheduler.rendersHAMiDeviceConfig" -}}
{{- if not (or .Values.deviceConfig.existingConfigMap (include "hami-scheduler.deviceConfigContent" .)) -}}
{{- if or .Values.deviceConfig.hamiChartDefault (include "hami-scheduler.hamiDeviceKeysGiven" .) -}}
true
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
HAMi v2.10's chart-default device-config.yaml (files/hami-device-config.yaml,
the bytes of apis/deviceconfig/chart-default.yaml) with HAMi's device keys
applied as its chart applies them, as YAML.
*/}}
{{- define "hami-scheduler.hamiDeviceConfig" -}}
{{- $root := . -}}
{{- $cfg := .Files.Get "files/hami-device-config.yaml" | fromYaml -}}
{{- range (include "hami-scheduler.hamiDeviceFields" . | fromYamlArray) -}}
{{- $key := index . 0 -}}
{{- $section := index . 1 -}}
{{- $field := index . 2 -}}
{{- with include "hami-scheduler.given" (dict "root" $root "path" $key) -}}
{{- $v := (fromJson .).v -}}
{{- /* HAMi's template writes these unquoted (runtimeClassName quoted): "true" is a boolean there. */ -}}
{{- if and (kindIs "string" $v) (ne $field "runtimeClassName") }}{{ $v = (printf "v: %s" $v | fromYaml).v }}{{ end -}}
{{- if eq $section "vnpus.configs" -}}
{{- range $cfg.vnpus.configs }}{{ $_ := set . $field $v }}{{ end -}}
{{- else -}}
{{- $_ := set (index $cfg $section) $field $v -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $vendor, $s := (include "hami-scheduler.hamiDeviceSwitches" . | fromYaml) -}}
{{- if and (get $s "section") (include "hami-scheduler.hamiDeviceOff" (dict "root" $root "vendor" $vendor)) -}}
{{- $_ := unset $cfg (get $s "section") -}}
{{- end -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/* HAMi's scheduler.admissionWebhook.failurePolicy when given, else webhook.failurePolicy. */}}
{{- define "hami-scheduler.webhookFailurePolicy" -}}
{{- with include "hami-scheduler.given" (dict "root" . "path" "scheduler.admissionWebhook.failurePolicy") -}}
{{ (fromJson .).v }}
{{- else -}}
{{ .Values.webhook.failurePolicy }}
{{- end -}}
{{- end -}}

{{/* HAMi's scheduler.forceOverwriteDefaultScheduler when given, else webhook.takeOverDefaultScheduler. */}}
{{- define "hami-scheduler.takeOverDefaultScheduler" -}}
{{- with include "hami-scheduler.given" (dict "root" . "path" "scheduler.forceOverwriteDefaultScheduler") -}}
{{ (fromJson .).v }}
{{- else -}}
{{ .Values.webhook.takeOverDefaultScheduler }}
{{- end -}}
{{- end -}}

{{/* Whether the pods have liveness probes: HAMi's scheduler.livenessProbe when given, else yes. */}}
{{- define "hami-scheduler.livenessProbes" -}}
{{- with include "hami-scheduler.given" (dict "root" . "path" "scheduler.livenessProbe") -}}
{{- if (fromJson .).v }}true{{ end -}}
{{- else -}}
true
{{- end -}}
{{- end -}}

{{/* The webhook's certificates: cert-manager when HAMi's scheduler.certManager.enabled is true, else webhook.certificates. */}}
{{- define "hami-scheduler.certificates" -}}
{{- $hamis := include "hami-scheduler.given" (dict "root" . "path" "scheduler.certManager.enabled") -}}
{{- if and $hamis (fromJson $hamis).v -}}
cert-manager
{{- else -}}
{{ .Values.webhook.certificates }}
{{- end -}}
{{- end -}}

{{/* Whether the chart makes cert-manager's Issuer itself: HAMi's scheduler.certManager.enabled (HAMi's chart makes a self-signed one). */}}
{{- define "hami-scheduler.makesIssuer" -}}
{{- $hamis := include "hami-scheduler.given" (dict "root" . "path" "scheduler.certManager.enabled") -}}
{{- if and $hamis (fromJson $hamis).v }}true{{ end -}}
{{- end -}}

{{/* Whether Ascend's chips are on: deviceConfig.enableAscend or HAMi's devices.ascend.enabled. */}}
{{- define "hami-scheduler.enableAscend" -}}
{{- if or .Values.deviceConfig.enableAscend (include "hami-scheduler.hamiDeviceOn" (dict "root" . "vendor" "ascend")) }}true{{ end -}}
{{- end -}}

{{/* Whether Iluvatar's chips are on: HAMi's devices.iluvatar.enabled. */}}
{{- define "hami-scheduler.enableIluvatar" -}}
{{- if include "hami-scheduler.hamiDeviceOn" (dict "root" . "vendor" "iluvatar") }}true{{ end -}}
{{- end -}}

{{/*
The resources HAMi's keys name that its chart marks managed
(ignoredByScheduler): the resource-name keys given but resourceName (nodes
advertise NVIDIA's count, which NodeResourcesFit keeps checking here), and
the devices.<vendor>.customresources given of vendors not switched off. As
a YAML list.
*/}}
{{- define "hami-scheduler.hamiManagedResources" -}}
{{- $root := . -}}
{{- $names := list -}}
{{- range (include "hami-scheduler.hamiResourceKeys" . | fromYamlArray) -}}
{{- $key := . -}}
{{- with include "hami-scheduler.given" (dict "root" $root "path" $key) -}}
{{- if ne $key "resourceName" }}{{ $names = append $names (fromJson .).v }}{{ end -}}
{{- end -}}
{{- end -}}
{{- range $vendor, $settings := (get .Values "devices" | default dict) -}}
{{- if and (kindIs "map" $settings) (not (include "hami-scheduler.hamiDeviceOff" (dict "root" $root "vendor" $vendor))) -}}
{{- range (get $settings "customresources" | default list) }}{{ $names = append $names . }}{{ end -}}
{{- end -}}
{{- end -}}
{{- toYaml $names -}}
{{- end -}}

{{/*
NodeResourcesFit's ignoredResources: scheduler.ignoredResources without
the resources of the vendors HAMi's devices.<vendor>.enabled switches off,
with the resources HAMi's keys name (hamiManagedResources).
*/}}
{{- define "hami-scheduler.ignoredResources" -}}
{{- $root := . -}}
{{- $off := list -}}
{{- range $vendor, $s := (include "hami-scheduler.hamiDeviceSwitches" . | fromYaml) -}}
{{- if and (get $s "domain") (include "hami-scheduler.hamiDeviceOff" (dict "root" $root "vendor" $vendor)) }}{{ $off = append $off (get $s "domain") }}{{ end -}}
{{- end -}}
{{- $names := list -}}
{{- range .Values.scheduler.ignoredResources -}}
{{- $name := . -}}
{{- $switchedOff := false -}}
{{- range $off }}{{ if hasPrefix . $name }}{{ $switchedOff = true }}{{ end }}{{ end -}}
{{- if not $switchedOff }}{{ $names = append $names $name }}{{ end -}}
{{- end -}}
{{- $names = concat $names (include "hami-scheduler.hamiManagedResources" . | fromYamlArray) -}}
{{- if ge (include "hami-scheduler.band" . | int) 37 -}}
{{- /* From 1.34 the HAMi plugin checks NVIDIA's count itself where a node advertises it, and places pods on DRA nodes, which advertise none. */ -}}
{{- $count := "nvidia.com/gpu" -}}
{{- with include "hami-scheduler.given" (dict "root" . "path" "resourceName") }}{{ $count = (fromJson .).v }}{{ end -}}
{{- $names = append $names $count -}}
{{- end -}}
{{- toYaml ($names | uniq) -}}
{{- end -}}
