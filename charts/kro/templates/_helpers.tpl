{{/* The chart's name, or nameOverride. */}}
{{- define "kro.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The name of the release's objects: fullnameOverride, else the release's name with the
chart's unless it holds it already (at most 63 characters, a DNS label). */}}
{{- define "kro.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The labels that select the controller's pods. */}}
{{- define "kro.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kro.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The labels of every object of the release. */}}
{{- define "kro.labels" -}}
{{- if .Values.metadata.includeHelmChart }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}
{{ include "kro.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- if .Values.metadata.includeManagedBy }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}
app.kubernetes.io/component: controller
app.kubernetes.io/part-of: kro
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The ServiceAccount the controller runs as. */}}
{{- define "kro.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "kro.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The controller's ClusterRole. */}}
{{- define "kro.clusterRoleName" -}}
{{- if eq .Values.rbac.mode "aggregation" }}
{{- printf "%s:controller" (include "kro.fullname" .) }}
{{- else }}
{{- printf "%s-cluster-role" (include "kro.fullname" .) }}
{{- end }}
{{- end }}
