{{/* The port of scheduler.metricsBindAddress (HAMi's chart reads it so for its container port). */}}
{{- define "hami-scheduler.metricsPort" -}}
{{- $port := splitList ":" .Values.scheduler.metricsBindAddress | last -}}
{{- if not (regexMatch "^[0-9]+$" $port) -}}
{{- fail (printf "scheduler.metricsBindAddress: %q has no port (host:port, e.g. :9395)" .Values.scheduler.metricsBindAddress) -}}
{{- end -}}
{{ $port }}
{{- end -}}

{{/* Whether the chart renders the scheduler's metrics Service: scheduler.service.enabled and a metrics listener. */}}
{{- define "hami-scheduler.metricsService" -}}
{{- if and .Values.scheduler.service.enabled .Values.scheduler.metricsBindAddress }}true{{ end -}}
{{- end -}}

{{/* Whether the cluster serves Prometheus Operator's ServiceMonitor (HAMi's chart renders its own only then). */}}
{{- define "hami-scheduler.servesServiceMonitor" -}}
{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor" }}true{{ end -}}
{{- end -}}
