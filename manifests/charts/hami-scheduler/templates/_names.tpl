{{/*
Object names, namespace and common metadata.

The objects are named as HAMi's chart names them for a release named
"hami" (hami-scheduler, hami-webhook, hami-scheduler-device, ...),
whatever this release's name: HAMi's users find them where they were.
HAMi's nameOverride and fullnameOverride change that prefix as HAMi's
chart does (its hami-vgpu.fullname): fullnameOverride is the prefix;
nameOverride makes it the release name when that contains nameOverride,
else <release>-<nameOverride>.
*/}}
{{- define "hami-scheduler.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if .Values.nameOverride -}}
{{- if contains .Values.nameOverride .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- else -}}
hami
{{- end -}}
{{- end -}}

{{/* The scheduler's objects (Deployment, ServiceAccount, Service, ClusterRole, ...). */}}
{{- define "hami-scheduler.schedulerFullname" -}}
{{- printf "%s-scheduler" (include "hami-scheduler.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The webhook's objects (Deployment, Service, MutatingWebhookConfiguration, ...). */}}
{{- define "hami-scheduler.webhookFullname" -}}
{{- printf "%s-webhook" (include "hami-scheduler.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The webhook's serving certificate Secret: webhook.tlsSecretName, else <webhook>-tls. */}}
{{- define "hami-scheduler.webhookTLSSecret" -}}
{{- .Values.webhook.tlsSecretName | default (printf "%s-tls" (include "hami-scheduler.webhookFullname" .)) -}}
{{- end -}}

{{/* The namespace of the namespaced objects: HAMi's namespaceOverride, else the release's. */}}
{{- define "hami-scheduler.namespace" -}}
{{- .Values.namespaceOverride | default .Release.Namespace -}}
{{- end -}}

{{/*
An object's labels: app.kubernetes.io/name (the component, also the
selector of its pods where it has any), its own, and HAMi's global.labels.
Takes (dict "root" $ "name" <component> "labels" <own labels>), both
optional.
*/}}
{{- define "hami-scheduler.labels" -}}
{{- $labels := dict -}}
{{- with .root.Values.global.labels }}{{ $labels = deepCopy . }}{{ end -}}
{{- with get . "labels" }}{{ $labels = merge (deepCopy .) $labels }}{{ end -}}
{{- with get . "name" }}{{ $_ := set $labels "app.kubernetes.io/name" . }}{{ end -}}
{{- with $labels -}}
labels:
  {{- toYaml . | nindent 2 }}
{{- end -}}
{{- end -}}

{{/*
An object's annotations: its own (dict "root" $ "own" <map>) and HAMi's
global.annotations (its own win); nothing when there are none.
*/}}
{{- define "hami-scheduler.annotations" -}}
{{- $annotations := dict -}}
{{- with .root.Values.global.annotations }}{{ $annotations = deepCopy . }}{{ end -}}
{{- with get . "own" }}{{ $annotations = merge (deepCopy .) $annotations }}{{ end -}}
{{- with $annotations -}}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end -}}
{{- end -}}

{{/*
An object's labels and annotations (dict "root" $ "name" <component>
"labels" <own labels> "own" <own annotations>) as metadata lines, for
`| nindent 2` after its name.
*/}}
{{- define "hami-scheduler.metadata" -}}
{{- $lines := list -}}
{{- with include "hami-scheduler.labels" . }}{{ $lines = append $lines . }}{{ end -}}
{{- with include "hami-scheduler.annotations" . }}{{ $lines = append $lines . }}{{ end -}}
{{- join "\n" $lines -}}
{{- end -}}
