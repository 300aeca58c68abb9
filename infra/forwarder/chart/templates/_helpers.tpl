{{/* Names. */}}
{{- define "forwarder.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "forwarder.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/*
The name of a cluster-scoped object of this release (ClusterRole, ClusterRoleBinding, webhook
configurations) and of its Roles in other namespaces: the release's full name and its namespace,
so two releases — of one name in two namespaces, as namespace-scoped installs often are — never
claim the same object.
*/}}
{{- define "forwarder.clusterUniqueName" -}}
{{- printf "%s-%s" (include "forwarder.fullname" .) .Release.Namespace | trunc 253 | trimSuffix "-" -}}
{{- end -}}

{{- define "forwarder.labels" -}}
app.kubernetes.io/name: {{ include "forwarder.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: forwarder
app.kubernetes.io/part-of: operless
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "forwarder.selectorLabels" -}}
app.kubernetes.io/name: {{ include "forwarder.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "forwarder.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "forwarder.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Leader election is on when asked, or ("auto") when more than one replica runs. */}}
{{- define "forwarder.leaderElection" -}}
{{- $le := .Values.leaderElection.enabled -}}
{{- if eq (toString $le) "auto" -}}{{ gt (int .Values.replicaCount) 1 }}{{- else -}}{{ $le }}{{- end -}}
{{- end -}}

{{- define "forwarder.leaseName" -}}
{{- default (include "forwarder.fullname" .) .Values.leaderElection.leaseName -}}
{{- end -}}

{{/* The API group of an apiVersion ("" for the core group). */}}
{{- define "forwarder.group" -}}
{{- if contains "/" . -}}{{ index (splitList "/" .) 0 }}{{- else -}}{{- end -}}
{{- end -}}

{{/* The forwarder's configuration file (see docs/forwarder.md). */}}
{{- define "forwarder.config" -}}
{{- $watch := list -}}
{{- $cfg := dict "clusterId" .Values.clusterId -}}
{{- $queue := dict -}}
{{- if .Values.queue.url }}{{ $_ := set $queue "url" .Values.queue.url }}{{ end -}}
{{- if .Values.queue.bulkUrl }}{{ $_ := set $queue "bulkUrl" .Values.queue.bulkUrl }}{{ end -}}
{{- if .Values.queue.region }}{{ $_ := set $queue "region" .Values.queue.region }}{{ end -}}
{{- if .Values.queue.endpoint }}{{ $_ := set $queue "endpoint" .Values.queue.endpoint }}{{ end -}}
{{- $_ := set $cfg "queue" $queue -}}
{{- if .Values.namespaces }}{{ $_ := set $cfg "namespaces" .Values.namespaces }}{{ end -}}
{{- $_ := set $cfg "primaries" .Values.primaries -}}
{{- $_ := set $cfg "owned" .Values.owned -}}
{{- $_ := set $cfg "related" (.Values.related | default list) -}}
{{- $le := dict "enabled" (eq (include "forwarder.leaderElection" .) "true") "leaseName" (include "forwarder.leaseName" .) "leaseDurationSeconds" .Values.leaderElection.leaseDurationSeconds "renewDeadlineSeconds" .Values.leaderElection.renewDeadlineSeconds "retryPeriodSeconds" .Values.leaderElection.retryPeriodSeconds "warmStandby" .Values.leaderElection.warmStandby -}}
{{- $_ := set $cfg "leaderElection" $le -}}
{{- $_ := set $cfg "server" (dict "port" (int .Values.port)) -}}
{{- if .Values.webhooks.clientAuth.caConfigMap }}{{ $_ := set $cfg "webhooks" (dict "clientAuth" (dict "caFile" "/etc/operless-webhook-client-ca/ca.crt")) }}{{ end -}}
{{- toYaml (mergeOverwrite $cfg (deepCopy .Values.settings)) -}}
{{- end -}}

{{/* Whether the webhook endpoint is served (settings.webhooks.enabled). */}}
{{- define "forwarder.webhooksEnabled" -}}
{{- dig "webhooks" "enabled" false .Values.settings -}}
{{- end -}}

{{/*
The clientConfig of one webhook route: the -webhook Service, port 443, path /<alias>/<route>;
caBundle from values (with cert-manager, its CA injector fills it in). Called with
(dict "root" $ "path" "/memcached/validate").
*/}}
{{- define "forwarder.webhookClientConfig" -}}
service:
  name: {{ include "forwarder.fullname" .root }}-webhook
  namespace: {{ .root.Release.Namespace }}
  path: {{ .path }}
  port: 443
{{- with .root.Values.webhooks.caBundle }}
caBundle: {{ . }}
{{- end }}
{{- end -}}

{{/* cert-manager's CA injector annotation (the Certificate of templates/webhook-certificate.yaml), when on. */}}
{{- define "forwarder.webhookCaInjection" -}}
{{- if .Values.webhooks.certManager.enabled -}}
cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/{{ include "forwarder.fullname" . }}-webhook
{{- end -}}
{{- end -}}

{{/*
"true" when CRD version `a` outranks version `b` in Kubernetes version priority (src/crd/version-priority.ts,
apimachinery's CompareKubeAwareVersionStrings): v<major>, v<major>beta<minor>, v<major>alpha<minor> first — GA
over beta over alpha, then the higher major, then the higher minor — every other name after them, alphabetically.
Call with (list a b).
*/}}
{{- define "forwarder.versionOutranks" -}}
{{- $a := index . 0 }}{{- $b := index . 1 }}
{{- $kube := "^v[0-9]{1,18}((alpha|beta)[0-9]{1,18})?$" }}
{{- $ka := regexMatch $kube $a }}{{- $kb := regexMatch $kube $b }}
{{- if and $ka $kb }}
{{- $ta := ternary 2 (ternary 1 0 (contains "beta" $a)) (not (regexMatch "alpha|beta" $a)) }}
{{- $tb := ternary 2 (ternary 1 0 (contains "beta" $b)) (not (regexMatch "alpha|beta" $b)) }}
{{- $ma := regexReplaceAll "^v([0-9]+).*$" $a "${1}" | atoi }}{{- $mb := regexReplaceAll "^v([0-9]+).*$" $b "${1}" | atoi }}
{{- $na := regexReplaceAll "^v[0-9]+(alpha|beta)?" $a "" | default "0" | atoi }}{{- $nb := regexReplaceAll "^v[0-9]+(alpha|beta)?" $b "" | default "0" | atoi }}
{{- or (gt $ta $tb) (and (eq $ta $tb) (or (gt $ma $mb) (and (eq $ma $mb) (gt $na $nb)))) }}
{{- else if or $ka $kb }}
{{- $ka }}
{{- else }}
{{- lt $a $b }}
{{- end }}
{{- end }}
