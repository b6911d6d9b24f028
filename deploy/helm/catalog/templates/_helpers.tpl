{{/* Names and labels. */}}
{{- define "catalog.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "catalog.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "catalog.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "catalog.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component: (dict "root" $ "component" "api"). */}}
{{- define "catalog.selectorLabels" -}}
app.kubernetes.io/name: {{ include "catalog.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "catalog.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "catalog.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "catalog.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{- define "catalog.storageClaimName" -}}
{{- default (printf "%s-storage" (include "catalog.fullname" .)) .Values.storage.persistence.existingClaim -}}
{{- end -}}

{{/* One variable from a Secret: (dict "name" "X" "secret" "s" "key" "k"). */}}
{{- define "catalog.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .secret | quote }}
      key: {{ .key | quote }}
{{- end -}}

{{/* DATABASE_PREPARED_STATEMENTS from the pooler settings. */}}
{{- define "catalog.preparedStatements" -}}
{{- if and .Values.database.pooler.transactionMode (not .Values.database.pooler.preparedStatements) -}}
false
{{- else -}}
true
{{- end -}}
{{- end -}}

{{- define "catalog.publicUrl" -}}
{{- if .Values.publicUrl -}}
{{- .Values.publicUrl -}}
{{- else if and .Values.ingress.enabled .Values.ingress.hosts -}}
{{- $host := (first .Values.ingress.hosts).host -}}
{{- printf "%s://%s" (ternary "https" "http" (gt (len .Values.ingress.tls) 0)) $host -}}
{{- end -}}
{{- end -}}

{{- define "catalog.storageUrl" -}}
{{- if .Values.s3.enabled -}}
{{- printf "s3://%s/%s" .Values.s3.bucket (.Values.s3.prefix | trimPrefix "/") -}}
{{- else -}}
{{- printf "file://%s" .Values.storage.mountPath -}}
{{- end -}}
{{- end -}}

{{/* Secret key of the URL KEDA's postgresql trigger counts jobs with. */}}
{{- define "catalog.kedaConnectionKey" -}}
{{- .Values.worker.keda.connectionKey | default .Values.database.directUrlKey | default .Values.database.urlKey -}}
{{- end -}}

{{/* Worker environment variable KEDA reads that URL from (connectionFromEnv). */}}
{{- define "catalog.kedaConnectionEnv" -}}
{{- if .Values.worker.keda.connectionKey -}}
KEDA_DATABASE_URL
{{- else if .Values.database.directUrlKey -}}
DATABASE_DIRECT_URL
{{- else -}}
DATABASE_URL
{{- end -}}
{{- end -}}

{{/* Settings every check of the values needs before anything renders. */}}
{{- define "catalog.validate" -}}
{{- if not .Values.database.existingSecret -}}
{{- fail "database.existingSecret: name the Secret holding DATABASE_URL (the chart creates no Secret)" -}}
{{- end -}}
{{- if not .Values.jwt.existingSecret -}}
{{- fail "jwt.existingSecret: name the Secret holding JWT_SECRET (the chart creates no Secret)" -}}
{{- end -}}
{{- if and .Values.s3.enabled (not .Values.s3.bucket) -}}
{{- fail "s3.bucket is required when s3.enabled is true" -}}
{{- end -}}
{{- if and .Values.redis.enabled (not .Values.redis.existingSecret) -}}
{{- fail "redis.existingSecret: name the Secret holding REDIS_URL" -}}
{{- end -}}
{{- if and .Values.worker.keda.enabled (gt (int .Values.worker.keda.minReplicaCount) (int .Values.worker.keda.maxReplicaCount)) -}}
{{- fail "worker.keda.minReplicaCount must not exceed worker.keda.maxReplicaCount" -}}
{{- end -}}
{{- if and .Values.api.autoscaling.enabled (gt (int .Values.api.autoscaling.minReplicas) (int .Values.api.autoscaling.maxReplicas)) -}}
{{- fail "api.autoscaling.minReplicas must not exceed api.autoscaling.maxReplicas" -}}
{{- end -}}
{{- end -}}

{{/* Environment of every process: database, secrets, store, logging. */}}
{{- define "catalog.commonEnv" -}}
# The root filesystem is read-only and the user has no home: /tmp is.
- name: HOME
  value: /tmp
- name: LOG_FORMAT
  value: {{ .Values.logFormat | quote }}
- name: RUST_LOG
  value: {{ .Values.rustLog | quote }}
{{ include "catalog.secretEnv" (dict "name" "DATABASE_URL" "secret" .Values.database.existingSecret "key" .Values.database.urlKey) }}
{{- if .Values.database.directUrlKey }}
{{ include "catalog.secretEnv" (dict "name" "DATABASE_DIRECT_URL" "secret" .Values.database.existingSecret "key" .Values.database.directUrlKey) }}
{{- end }}
{{- if .Values.database.readUrlsKey }}
{{ include "catalog.secretEnv" (dict "name" "DATABASE_READ_URLS" "secret" .Values.database.existingSecret "key" .Values.database.readUrlsKey) }}
- name: READ_MAX_LAG_SECONDS
  value: {{ .Values.database.readMaxLagSeconds | quote }}
{{- end }}
{{- if .Values.database.sandboxUrlKey }}
{{ include "catalog.secretEnv" (dict "name" "SANDBOX_DATABASE_URL" "secret" .Values.database.existingSecret "key" .Values.database.sandboxUrlKey) }}
{{- end }}
- name: DATABASE_PREPARED_STATEMENTS
  value: {{ include "catalog.preparedStatements" . | quote }}
{{ include "catalog.secretEnv" (dict "name" "JWT_SECRET" "secret" .Values.jwt.existingSecret "key" .Values.jwt.key) }}
{{- with include "catalog.publicUrl" . }}
- name: PUBLIC_URL
  value: {{ . | quote }}
{{- end }}
- name: STORAGE_URL
  value: {{ include "catalog.storageUrl" . | quote }}
{{- if .Values.s3.enabled }}
{{- with .Values.s3.region }}
- name: AWS_REGION
  value: {{ . | quote }}
{{- end }}
{{- with .Values.s3.endpoint }}
- name: AWS_ENDPOINT
  value: {{ . | quote }}
{{- end }}
{{- if .Values.s3.allowHttp }}
- name: AWS_ALLOW_HTTP
  value: "true"
{{- end }}
{{- if .Values.s3.existingSecret }}
{{ include "catalog.secretEnv" (dict "name" "AWS_ACCESS_KEY_ID" "secret" .Values.s3.existingSecret "key" .Values.s3.accessKeyIdKey) }}
{{ include "catalog.secretEnv" (dict "name" "AWS_SECRET_ACCESS_KEY" "secret" .Values.s3.existingSecret "key" .Values.s3.secretAccessKeyKey) }}
{{- end }}
{{- end }}
{{- if .Values.metricsToken.existingSecret }}
{{ include "catalog.secretEnv" (dict "name" "METRICS_TOKEN" "secret" .Values.metricsToken.existingSecret "key" .Values.metricsToken.key) }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Volumes and mounts shared by the API and the workers. */}}
{{- define "catalog.volumes" -}}
- name: tmp
  emptyDir:
    {{- with .tmpSizeLimit }}
    sizeLimit: {{ . }}
    {{- else }} {}
    {{- end }}
{{- if not .root.Values.s3.enabled }}
- name: storage
  persistentVolumeClaim:
    claimName: {{ include "catalog.storageClaimName" .root }}
{{- end }}
{{- end -}}

{{- define "catalog.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
{{- if not .Values.s3.enabled }}
- name: storage
  mountPath: {{ .Values.storage.mountPath }}
{{- end }}
{{- end -}}
