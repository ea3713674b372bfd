{{- define "sexton.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "sexton.master" -}}{{ include "sexton.fullname" . }}-master{{- end -}}

{{- define "sexton.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "sexton.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The DNS suffix of a headless service: SERVICE.NAMESPACE.svc.DOMAIN. */}}
{{- define "sexton.svcDomain" -}}
{{ .svc }}.{{ .root.Release.Namespace }}.svc.{{ .root.Values.clusterDomain }}
{{- end -}}

{{/* Every master's RPC address, as holders and clients dial them. */}}
{{- define "sexton.masterRPCAddrs" -}}
{{- $m := include "sexton.master" . -}}
{{- $d := include "sexton.svcDomain" (dict "svc" $m "root" .) -}}
{{- $out := list -}}
{{- range $i, $_ := until (int .Values.master.replicas) -}}
{{- $out = append $out (printf "%s-%d.%s:%d" $m $i $d (int $.Values.master.ports.rpc)) -}}
{{- end -}}
{{- join "," $out -}}
{{- end -}}

{{- define "sexton.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile: {type: RuntimeDefault}
{{- end -}}

{{- define "sexton.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities: {drop: [ALL]}
{{- end -}}

{{/* TLS settings of a pod of ROLE (master or holder); its files are ROLE-POD.crt/.key. */}}
{{- define "sexton.tlsEnv" -}}
{{- if .root.Values.tls.enabled }}
- {name: SEXTON_TLS_CA, value: /etc/sexton/tls/ca.crt}
- {name: SEXTON_TLS_CERT, value: "/etc/sexton/tls/{{ .role }}-$(POD_NAME).crt"}
- {name: SEXTON_TLS_KEY, value: "/etc/sexton/tls/{{ .role }}-$(POD_NAME).key"}
- {name: SEXTON_TLS_CLIENT_AUTH, value: {{ .root.Values.tls.clientAuth | quote }}}
{{- end }}
{{- end -}}

{{- define "sexton.tokenEnv" -}}
- name: {{ .name }}
  valueFrom: {secretKeyRef: {name: {{ .root.Values.auth.secretName }}, key: {{ .key }}}}
{{- end -}}

{{- define "sexton.probes" -}}
{{- $scheme := ternary "HTTPS" "HTTP" .Values.tls.enabled -}}
startupProbe:
  httpGet: {path: /healthz, port: http, scheme: {{ $scheme }}}
  periodSeconds: 2
  failureThreshold: 150
readinessProbe:
  httpGet: {path: /readyz, port: http, scheme: {{ $scheme }}}
  periodSeconds: 2
  failureThreshold: 3
livenessProbe:
  httpGet: {path: /healthz, port: http, scheme: {{ $scheme }}}
  periodSeconds: 10
  failureThreshold: 6
{{- end -}}
