{{/*
The Kubernetes minors of the shipped builds, newest first, as
internal/kubeversion.Bands lists them (TestChartBands keeps the two equal).
A build of minor B serves API servers 1.(B-3) (never below 1.31, where
kube-scheduler's --emulated-version begins; B itself below that) to 1.(B+1);
"B:O" is a band also tested on the older minor 1.O (Band.TestedBelow).
*/}}
{{- define "hami-scheduler.bands" -}}
37 33 30:28
{{- end -}}

{{/* The cluster's Kubernetes minor (a managed cluster's "36+" is 36). */}}
{{- define "hami-scheduler.kubeMinor" -}}
{{- .Capabilities.KubeVersion.Minor | trimSuffix "+" | int -}}
{{- end -}}

{{/*
The band of the images: image.kubernetesBand when set, else the newest
band that serves the cluster's minor; none serving it fails the render.
*/}}
{{- define "hami-scheduler.band" -}}
{{- if .Values.image.kubernetesBand -}}
{{ .Values.image.kubernetesBand | toString | trimPrefix "1." }}
{{- else -}}
{{- $minor := include "hami-scheduler.kubeMinor" . | int -}}
{{- $band := 0 -}}
{{- $lo := 1000 -}}
{{- $hi := 0 -}}
{{- range (include "hami-scheduler.bands" . | splitList " ") -}}
{{- $entry := splitList ":" . -}}
{{- $b := first $entry | int -}}
{{- $oldest := $b -}}
{{- if ge $b 31 -}}{{- $oldest = max 31 (sub $b 3) -}}{{- end -}}
{{- if gt (len $entry) 1 -}}{{- $oldest = min $oldest (last $entry | int) -}}{{- end -}}
{{- $lo = min $lo $oldest -}}
{{- $hi = max $hi (add $b 1) -}}
{{- if and (eq $band 0) (ge $minor $oldest) (le $minor (add $b 1)) -}}{{- $band = $b -}}{{- end -}}
{{- end -}}
{{- if eq $band 0 -}}
{{- fail (printf "no hami-scheduler build serves Kubernetes %s (the builds serve 1.%d to 1.%d); set image.kubernetesBand to force one" .Capabilities.KubeVersion.Version $lo $hi) -}}
{{- end -}}
{{ $band }}
{{- end -}}
{{- end -}}

{{/*
The image reference: repository@digest when a digest is set, else
repository:tag, the tag being image.tag or <appVersion>-k8s1.<band>; the
repository under HAMi's global.imageRegistry when that is set.
*/}}
{{- define "hami-scheduler.image" -}}
{{- $repository := .Values.image.repository -}}
{{- with .Values.global.imageRegistry }}{{ $repository = printf "%s/%s" (trimSuffix "/" .) $repository }}{{ end -}}
{{- if .Values.image.digest -}}
{{ $repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ $repository }}:{{ .Values.image.tag | default (printf "%s-k8s1.%s" .Chart.AppVersion (include "hami-scheduler.band" .)) }}
{{- end -}}
{{- end -}}

{{/*
Both pods' imagePullSecrets: imagePullSecrets, and HAMi's
global.imagePullSecrets (names, or {name: ...} as ours).
*/}}
{{- define "hami-scheduler.imagePullSecrets" -}}
{{- $secrets := list -}}
{{- range concat .Values.imagePullSecrets .Values.global.imagePullSecrets -}}
{{- if kindIs "string" . }}{{ $secrets = append $secrets (dict "name" .) }}{{ else }}{{ $secrets = append $secrets . }}{{ end -}}
{{- end -}}
{{- with $secrets | uniq -}}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end -}}
{{- end -}}

{{/*
scheduler.featureGates less the gates the band's kube-scheduler does not
know (it refuses an unknown gate at start): each gate below with the first
minor that has it.
*/}}
{{- define "hami-scheduler.featureGates" -}}
{{- $since := dict "NominatedNodeNameForExpectation" 34 -}}
{{- $band := include "hami-scheduler.band" . | int -}}
{{- $kept := list -}}
{{- $gates := .Values.scheduler.featureGates | default "" | splitList "," -}}
{{- if .Values.gangs.inTree.enabled -}}
{{- if lt (include "hami-scheduler.kubeMinor" . | int) 37 -}}
{{- fail (printf "gangs.inTree needs Kubernetes 1.37 or later (scheduling.k8s.io/v1beta1 PodGroup); this cluster runs %s: use gangs.coscheduling" .Capabilities.KubeVersion.Version) -}}
{{- end -}}
{{- $gates = append $gates "GenericWorkload=true" -}}
{{- end -}}
{{- range $gates -}}
{{- $gate := . | trim -}}
{{- $name := splitList "=" $gate | first -}}
{{- if and $gate (ge $band (get $since $name | default 0 | int)) -}}
{{- $kept = append $kept $gate -}}
{{- end -}}
{{- end -}}
{{ join "," $kept }}
{{- end -}}

{{/* Whether the cluster serves admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (1.30 and later). */}}
{{- define "hami-scheduler.servesAdmissionPolicy" -}}
{{- if .Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy" -}}
true
{{- end -}}
{{- end -}}

{{/*
The name of the ConfigMap holding HAMi's device-config.yaml, empty when
none: deviceConfig.existingConfigMap, or the chart's (<scheduler>-device,
as HAMi's chart names its own) for a given content or HAMi's rendered one.
*/}}
{{- define "hami-scheduler.deviceConfigMap" -}}
{{- if .Values.deviceConfig.existingConfigMap -}}
{{ .Values.deviceConfig.existingConfigMap }}
{{- else if or (include "hami-scheduler.deviceConfigContent" .) (include "hami-scheduler.rendersHAMiDeviceConfig" .) -}}
{{ include "hami-scheduler.schedulerFullname" . }}-device
{{- end -}}
{{- end -}}

{{/* Where both binaries read HAMi's device-config.yaml. */}}
{{- define "hami-scheduler.deviceConfigFile" -}}
/etc/hami-device/device-config.yaml
{{- end -}}

{{/* The volume of HAMi's device-config.yaml. */}}
{{- define "hami-scheduler.deviceConfigVolume" -}}
- name: device-config
  configMap:
    name: {{ include "hami-scheduler.deviceConfigMap" . }}
    items:
      - key: {{ .Values.deviceConfig.key }}
        path: device-config.yaml
{{- end -}}

{{/*
The HAMi plugin's args: scheduler.pluginArgs with HAMi's default policies
(scheduler.defaultSchedulerPolicy) and the device config's.
*/}}
{{- define "hami-scheduler.pluginArgs" -}}
{{- $root := . -}}
{{- $args := deepCopy .Values.scheduler.pluginArgs -}}
{{- range $policy := list "nodeSchedulerPolicy" "gpuSchedulerPolicy" -}}
{{- with include "hami-scheduler.given" (dict "root" $root "path" (printf "scheduler.defaultSchedulerPolicy.%s" $policy)) -}}
{{- $_ := set $args $policy (fromJson .).v -}}
{{- end -}}
{{- end -}}
{{- with .Values.scheduler.burstQueueWait -}}
{{- $_ := set $args "burstQueueWait" . -}}
{{- end -}}
{{- if include "hami-scheduler.deviceConfigMap" . -}}
{{- $_ := set $args "deviceConfigFile" (include "hami-scheduler.deviceConfigFile" .) -}}
{{- end -}}
{{- if include "hami-scheduler.enableAscend" . -}}
{{- $_ := set $args "enableAscend" true -}}
{{- end -}}
{{- if include "hami-scheduler.enableIluvatar" . -}}
{{- $_ := set $args "enableIluvatar" true -}}
{{- end -}}
{{- if $args -}}
{{ toYaml $args }}
{{- end -}}
{{- end -}}

{{/* The pod securityContext of both Deployments. */}}
{{- define "hami-scheduler.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* The container securityContext of both Deployments. */}}
{{- define "hami-scheduler.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end -}}

{{/* The KubeSchedulerConfiguration (manifests/scheduler-config.yaml). */}}
{{- define "hami-scheduler.schedulerConfig" -}}
# hami-scheduler's KubeSchedulerConfiguration: run it with
#   hami-scheduler --config=/etc/hami/scheduler-config.yaml
# beside the cluster's kube-scheduler. Pods choose it with
# spec.schedulerName: {{ .Values.schedulerName }} (HAMi's webhook sets it).
# scheduler/profile builds the same configuration in Go for the in-process
# schedulers of the tests; scheduler/profile's test keeps the two equal.
# Source: the Helm chart manifests/charts/hami-scheduler (template
# hami-scheduler.schedulerConfig); `make manifests` writes it to
# manifests/scheduler-config.yaml: edit the chart, not that file.
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
# A device pod costs the scheduler 4 API writes (node lock, assignment,
# binding, Scheduled event); kube-scheduler's default client limit (50
# QPS, burst 100) would cap it at about 12 pods/s whatever the nodes can
# take.
clientConnection:
  qps: {{ .Values.scheduler.clientQPS }}
  burst: {{ .Values.scheduler.clientBurst }}
leaderElection:
  leaderElect: {{ .Values.scheduler.leaderElect }}
  # Not kube-scheduler's lease: both schedulers run at once. The Role
  # hami-scheduler-leader-election allows this lease only.
  resourceName: {{ .Values.schedulerName }}
  resourceNamespace: {{ include "hami-scheduler.namespace" . }}
profiles:
- schedulerName: {{ .Values.schedulerName }}
{{- with .Values.scheduler.percentageOfNodesToScore }}
  # Binpack chooses among the nodes scored; kube-scheduler's adaptive
  # default scores about half of a cluster of a few hundred nodes.
  percentageOfNodesToScore: {{ . }}
{{- end }}
  plugins:
{{- if .Values.gangs.coscheduling.enabled }}
    # Coscheduling's queue order (priority, then the group: a PodGroup's
    # pods one after another) replaces PrioritySort's.
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
{{- end }}
    # Every default plugin (node affinity, taints, spreading, ...) runs as
    # usual; HAMi joins at each extension point it implements (PreFilter,
    # Filter, PostFilter, Score, Reserve, PreBind, PostBind, queueing hints).
    multiPoint:
{{- $dra := ge (include "hami-scheduler.band" . | int) 37 }}
{{- if $dra }}
      # kube-scheduler's DynamicResources takes charge of every extended
      # resource of a pod once a DeviceClass maps one of them (1.36+, e.g.
      # nvidia.com/gpu by NVIDIA's DRA driver), and would refuse HAMi's
      # share resources on every node. HAMiDynamicResources is the same
      # plugin shown each pod without the resources HAMi places; the pod's
      # ResourceClaims stay its own. DefaultPreemption follows it, as
      # upstream orders the two.
      disabled:
      - name: DynamicResources
      - name: DefaultPreemption
{{- end }}
      enabled:
{{- if $dra }}
      - name: HAMiDynamicResources
        weight: 2
      - name: DefaultPreemption
{{- end }}
      - name: HAMi
        # HAMi's node policy (binpack/spread of device use) outweighs the
        # default cpu/memory spreading, as HAMi's extender's decision does.
        weight: 10
{{- if .Values.gangs.coscheduling.enabled }}
      # scheduler-plugins' PodGroups placed all together or not at all
      # (PreFilter, PostFilter, Permit, Unreserve, queueing hints).
      - name: Coscheduling
{{- end }}
  pluginConfig:
  - name: NodeResourcesFit
    args:
      # Nodes do not advertise the share of a card a container asks for
      # (memory, cores, ...), nor some vendors' counts: every vendor's are
      # HAMi's business, as HAMi's extender marks them ignoredByScheduler.
{{- if $dra }}
      # From 1.34 nvidia.com/gpu too: the HAMi plugin checks it where a
      # device plugin advertises it, and places pods on DRA nodes, which
      # advertise none.
{{- else }}
      # Nodes advertise nvidia.com/gpu (cards x split count), checked here.
{{- end }}
      ignoredResources:
      {{- include "hami-scheduler.ignoredResources" . | nindent 6 }}
{{- with include "hami-scheduler.pluginArgs" . }}
  - name: HAMi
    args:
      {{- . | nindent 6 }}
{{- else }}
  # HAMi's own settings, all optional (defaults shown):
  # - name: HAMi
  #   args:
  #     nodeSchedulerPolicy: binpack   # or spread; pod annotation hami.io/node-scheduler-policy
  #     gpuSchedulerPolicy: spread     # or binpack; pod annotation hami.io/gpu-scheduler-policy
  #     nodeLockExpiry: 5m             # or env HAMI_NODELOCK_EXPIRE
  #     nodeLockWait: 30s
  #     nodeQueueWait: 2s              # device-plugin work queued on a node before Score prefers shorter queues; 0: the count alone
  #     burstQueueWait: 0s             # a burst's work queued on a node before Score prefers shorter queues (chart value scheduler.burstQueueWait); 0: none, HAMi's packing
  #     nodeQueueLimit: 0              # pods queued on a node before Score prefers shorter queues, a burst's included (with nodeQueueWait 0: the bound); 0: none
  #     candidateNodes: 100            # nodes offered to the other plugins per device pod on larger clusters; 0: every node
  #     deviceConfigFile: ""           # HAMi's device-config.yaml (chart value deviceConfig)
  #     vendors:
  #     - name: nvidia
  #       defaultMemoryMiB: 0          # 0: the whole card
  #       defaultCores: 0
{{- end }}
{{- if and .Values.gangs.coscheduling.enabled .Values.gangs.coscheduling.args }}
  - name: Coscheduling
    args:
      {{- toYaml .Values.gangs.coscheduling.args | nindent 6 }}
{{- end }}
{{- end -}}

{{/*
webhook.resourcePrefixes, with the domain (<domain>/) of each resource
HAMi's keys name that none of them covers, as a CEL list literal (JSON
strings are CEL strings).
*/}}
{{- define "hami-scheduler.resourcePrefixes" -}}
{{- if not .Values.webhook.resourcePrefixes -}}
{{- fail "webhook.resourcePrefixes must name at least one resource prefix" -}}
{{- end -}}
{{- $prefixes := .Values.webhook.resourcePrefixes -}}
{{- $names := include "hami-scheduler.hamiManagedResources" . | fromYamlArray -}}
{{- with include "hami-scheduler.given" (dict "root" . "path" "resourceName") }}{{ $names = append $names (fromJson .).v }}{{ end -}}
{{- range $names -}}
{{- $name := . -}}
{{- $covered := false -}}
{{- range $prefixes }}{{ if hasPrefix . $name }}{{ $covered = true }}{{ end }}{{ end -}}
{{- if not $covered -}}
{{- $parts := splitList "/" $name -}}
{{- $prefixes = append $prefixes (ternary (printf "%s/" (first $parts)) $name (gt (len $parts) 1)) -}}
{{- end -}}
{{- end -}}
{{ toJson $prefixes }}
{{- end -}}
