{{/*
HAMi v2.10's value keys that have no honest meaning here: given, each
fails the install with the reason, never silently ignored. A rule names a
key or a subtree (every key under it); "accept" lists values at which the
key asks for nothing this chart does not do; "honoured" marks a key under
a refused subtree that is read (see _hami-keys.tpl). The most specific
rule wins. docs/helm-values.md lists them.
*/}}
{{- define "hami-scheduler.hamiRefusedKeys" -}}
- key: global.imageTag
  why: it tags HAMi's images; this chart runs one image of its own for both binaries (image.repository, image.tag, image.digest)
- key: global.gpuHookPath
  why: it is where HAMi's device plugin installs HAMi-core on the nodes; the device plugin stays HAMi's (set it in HAMi's release)
- key: global.managedNodeSelectorEnable
  accept: [false]
  why: HAMi v2.10 only hands it to its extender as NODE_SELECTOR_* variables, which no HAMi code reads; hami-scheduler has no such setting
- key: global.managedNodeSelector
  why: HAMi v2.10 only hands it to its extender as NODE_SELECTOR_* variables, which no HAMi code reads; hami-scheduler has no such setting
- key: podSecurityPolicy.enabled
  accept: [false]
  why: PodSecurityPolicy is gone since Kubernetes 1.25; both pods meet the restricted Pod Security Standard
- key: scheduler.nodeLabelSelector
  why: HAMi's --node-label-selector (devices read only from matching nodes) has no counterpart in hami-scheduler; steer device pods with node selectors or affinity
- key: scheduler.kubeScheduler.enabled
  accept: [true]
  why: kube-scheduler is hami-scheduler itself, with HAMi's plugin compiled in; it cannot be left out
- key: scheduler.kubeScheduler
  why: kube-scheduler is hami-scheduler itself, with HAMi's plugin compiled in; use image.* for its image, scheduler.extraArgs for its flags, scheduler.resources for its resources
- key: scheduler.extender
  why: there is no extender, HAMi's plugin runs inside hami-scheduler; use image.* for its image, scheduler.pluginArgs for HAMi's settings, scheduler.extraArgs for flags, scheduler.resources for resources
- key: scheduler.admissionWebhook.customURL.enabled
  accept: [false]
  why: the API server calls hami-webhook through its Service; an external URL is not offered
- key: scheduler.admissionWebhook.customURL
  why: the API server calls hami-webhook through its Service; an external URL is not offered
- key: scheduler.patch.enabled
  accept: [true]
  why: there are no certificate jobs; hami-webhook issues and rotates its own certificate (webhook.certificates self, the default), or cert-manager does (scheduler.certManager.enabled), or you bring one (webhook.certificates external)
- key: scheduler.patch
  why: there are no certificate jobs; hami-webhook issues and rotates its own certificate (webhook.certificates self, the default), or cert-manager does (scheduler.certManager.enabled)
- key: scheduler.service.httpPort
  why: the webhook has a Service of its own (port 443, no NodePort); the scheduler's Service serves metrics only
- key: scheduler.service.httpTargetPort
  why: the webhook has a Service of its own (port 443, no NodePort); the scheduler's Service serves metrics only
- key: scheduler.service.schedulerPort
  why: the webhook has a Service of its own (port 443, no NodePort); the scheduler's Service serves metrics only
- key: devicePlugin.enabled
  accept: [false]
  why: this chart installs no device plugin; HAMi's stays (HAMi's release keeps it)
- key: devicePlugin.runtimeClassName
  honoured: true
- key: devicePlugin
  why: it configures HAMi's device plugin, which this chart does not install; set it in HAMi's release, which keeps the device plugin
- key: mockDevicePlugin.enabled
  accept: [false]
  why: this chart installs no device plugin
- key: mockDevicePlugin
  why: this chart installs no device plugin
- key: legacyMetrics
  accept: [false]
  why: HAMi's --legacy-metrics names (GPUDeviceMemoryLimit, ...) are not served, only HAMi's hami_* names
- key: devices.ascend.image
  why: it configures Ascend's device plugin, which this chart does not install
- key: devices.ascend.imagePullPolicy
  why: it configures Ascend's device plugin, which this chart does not install
- key: devices.ascend.extraArgs
  why: it configures Ascend's device plugin, which this chart does not install
- key: devices.ascend.nodeSelector
  why: it configures Ascend's device plugin, which this chart does not install
- key: devices.ascend.tolerations
  why: it configures Ascend's device plugin, which this chart does not install
{{- end -}}

{{/*
The given leaves under a value (dict "path" <dotted path> "value" <v>),
one "path" a line: maps are walked, anything else (lists included) is a
leaf; null leaves are not given.
*/}}
{{- define "hami-scheduler.leaves" -}}
{{- $path := .path -}}
{{- if kindIs "map" .value -}}
{{- range $k, $v := .value -}}
{{- with include "hami-scheduler.leaves" (dict "path" (printf "%s.%s" $path $k) "value" $v) }}
{{ . }}
{{- end -}}
{{- end -}}
{{- else if not (kindIs "invalid" .value) -}}
{{ $path }}
{{- end -}}
{{- end -}}

{{/* The rule of a key: the refused-key rule with the longest key that is the key or a dotted prefix of it, as JSON; "" for none. */}}
{{- define "hami-scheduler.hamiRuleOf" -}}
{{- $key := .key -}}
{{- $best := dict -}}
{{- range .rules -}}
{{- if or (eq .key $key) (hasPrefix (printf "%s." .key) $key) -}}
{{- if gt (len .key) (len (get $best "key" | default "")) }}{{ $best = . }}{{ end -}}
{{- end -}}
{{- end -}}
{{- with $best }}{{ toJson . }}{{ end -}}
{{- end -}}

{{/* The refused keys given, each with its reason, one a line. */}}
{{- define "hami-scheduler.hamiRefusals" -}}
{{- $root := . -}}
{{- $rules := include "hami-scheduler.hamiRefusedKeys" . | fromYamlArray -}}
{{- $roots := list -}}
{{- range $rules }}{{ $roots = append $roots (splitList "." .key | first) }}{{ end -}}
{{- $out := list -}}
{{- range ($roots | uniq) -}}
{{- if hasKey $root.Values . -}}
{{- range (include "hami-scheduler.leaves" (dict "path" . "value" (index $root.Values .)) | trim | splitList "\n") -}}
{{- $leaf := trim . -}}
{{- with include "hami-scheduler.hamiRuleOf" (dict "rules" $rules "key" $leaf) -}}
{{- $rule := fromJson . -}}
{{- $value := (fromJson (include "hami-scheduler.given" (dict "root" $root "path" $leaf))).v -}}
{{- if not (or (get $rule "honoured") (has $value (get $rule "accept" | default list))) -}}
{{- $out = append $out (printf "%s: %s" $leaf $rule.why) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $out | join "\n" -}}
{{- end -}}

{{/*
Values whose combination this chart cannot honour, one a line: HAMi's
device keys that only set a field of a device config when the config is
given otherwise or the plugin's vendors list is used instead, policies
hami-scheduler has no default for, and a metrics port the listener does
not use.
*/}}
{{- define "hami-scheduler.valueConflicts" -}}
{{- $root := . -}}
{{- $out := list -}}
{{- $fileGiven := or .Values.deviceConfig.existingConfigMap (include "hami-scheduler.deviceConfigContent" .) -}}
{{- $vendors := get .Values.scheduler.pluginArgs "vendors" -}}
{{- $resourceKeys := include "hami-scheduler.hamiResourceKeys" . | fromYamlArray -}}
{{- $fieldKeys := list -}}
{{- range (include "hami-scheduler.hamiDeviceFields" . | fromYamlArray) }}{{ $fieldKeys = append $fieldKeys (first .) }}{{ end -}}
{{- range (include "hami-scheduler.hamiDeviceKeysGiven" . | splitList "\n" | compact) -}}
{{- if $vendors -}}
{{- $out = append $out (printf "%s: HAMi's device keys describe its device-config.yaml, which scheduler.pluginArgs.vendors excludes; use one or the other" .) -}}
{{- else if and $fileGiven (has . $fieldKeys) (not (has . $resourceKeys)) -}}
{{- $out = append $out (printf "%s: it sets a field of the device-config.yaml HAMi's chart renders; with deviceConfig.content, device-config.content or deviceConfig.existingConfigMap the device config is that file: set the field there" .) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.deviceConfig.hamiChartDefault (or $fileGiven $vendors) -}}
{{- $out = append $out "deviceConfig.hamiChartDefault: a device config is given (deviceConfig.content, device-config.content, deviceConfig.existingConfigMap or scheduler.pluginArgs.vendors); set one" -}}
{{- end -}}
{{- range $policy := list "nodeSchedulerPolicy" "gpuSchedulerPolicy" -}}
{{- with include "hami-scheduler.given" (dict "root" $root "path" (printf "scheduler.defaultSchedulerPolicy.%s" $policy)) -}}
{{- $v := (fromJson .).v -}}
{{- if not (has $v (list "binpack" "spread")) -}}
{{- $out = append $out (printf "scheduler.defaultSchedulerPolicy.%s: %v is not a default hami-scheduler has (binpack or spread; a pod may still ask for others with its annotation)" $policy $v) -}}
{{- end -}}
{{- $ours := index ($root.Values.scheduler.pluginArgs | default dict) $policy -}}
{{- if and $ours (ne $ours $v) -}}
{{- $out = append $out (printf "scheduler.defaultSchedulerPolicy.%s: %v differs from scheduler.pluginArgs.%s %v; set one" $policy $v $policy $ours) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- with .Values.scheduler.burstQueueWait -}}
{{- $ours := index ($root.Values.scheduler.pluginArgs | default dict) "burstQueueWait" -}}
{{- if and $ours (ne (toString $ours) (toString .)) -}}
{{- $out = append $out (printf "scheduler.burstQueueWait: %v differs from scheduler.pluginArgs.burstQueueWait %v; set one" . $ours) -}}
{{- end -}}
{{- end -}}
{{- with .Values.scheduler.metricsBindAddress -}}
{{- $port := include "hami-scheduler.metricsPort" $root | int -}}
{{- if and $root.Values.scheduler.service.enabled (ne ($root.Values.scheduler.service.monitorTargetPort | int) $port) -}}
{{- $out = append $out (printf "scheduler.service.monitorTargetPort: %v is not the port of scheduler.metricsBindAddress %s, where the scheduler serves metrics" $root.Values.scheduler.service.monitorTargetPort .) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.prometheus.enabled (not (include "hami-scheduler.metricsService" .)) -}}
{{- $out = append $out "prometheus.enabled: the ServiceMonitor scrapes the scheduler's metrics Service, which scheduler.metricsBindAddress \"\" or scheduler.service.enabled false leaves out" -}}
{{- end -}}
{{- $out | join "\n" -}}
{{- end -}}

{{/* Fails the render naming every value it cannot honour. */}}
{{- define "hami-scheduler.checkValues" -}}
{{- $problems := concat (include "hami-scheduler.hamiRefusals" . | splitList "\n") (include "hami-scheduler.valueConflicts" . | splitList "\n") | compact -}}
{{- if $problems -}}
{{- fail (printf "values this chart does not honour (docs/helm-values.md):\n- %s" (join "\n- " $problems)) -}}
{{- end -}}
{{- end -}}
