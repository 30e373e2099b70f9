{{/* Names ----------------------------------------------------------------------------------- */}}

{{- define "mmi.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "mmi.fullname" -}}
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

{{/* <fullname>-<component>, e.g. mmi.componentName (list $ "dispatcher") */}}
{{- define "mmi.componentName" -}}
{{- $root := index . 0 -}}
{{- printf "%s-%s" (include "mmi.fullname" $root | trunc 40 | trimSuffix "-") (index . 1) -}}
{{- end -}}

{{- define "mmi.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels ---------------------------------------------------------------------------------- */}}

{{- define "mmi.labels" -}}
helm.sh/chart: {{ include "mmi.chart" . }}
app.kubernetes.io/name: {{ include "mmi.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: multicluster-maestro-integrations
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* mmi.componentLabels (list $ "dispatcher") */}}
{{- define "mmi.componentLabels" -}}
{{ include "mmi.labels" (index . 0) }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{/* mmi.selectorLabels (list $ "dispatcher") */}}
{{- define "mmi.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mmi.name" (index . 0) }}
app.kubernetes.io/instance: {{ (index . 0).Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{/* Service accounts ------------------------------------------------------------------------ */}}

{{- define "mmi.dispatcher.serviceAccountName" -}}
{{- if .Values.dispatcher.serviceAccount.create -}}
{{- default (include "mmi.componentName" (list . "dispatcher")) .Values.dispatcher.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.dispatcher.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "mmi.statusSink.serviceAccountName" -}}
{{- if .Values.statusSink.serviceAccount.create -}}
{{- default (include "mmi.componentName" (list . "status-sink")) .Values.statusSink.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.statusSink.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Image ----------------------------------------------------------------------------------- */}}

{{- define "mmi.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* Required values, checked once ----------------------------------------------------------- */}}

{{- define "mmi.validate" -}}
{{- if not .Values.store.existingSecret -}}
{{- fail "store.existingSecret is required: name of an existing Secret holding the PostgreSQL DSN (key store.dsnKey)" -}}
{{- end -}}
{{- $t := .Values.transport -}}
{{- if not (has $t.type (list "grpc" "mqtt" "kafka")) -}}
{{- fail (printf "transport.type must be grpc, mqtt or kafka, got %q" $t.type) -}}
{{- end -}}
{{- if and (eq $t.type "mqtt") (not $t.mqtt.brokerHost) -}}
{{- fail "transport.mqtt.brokerHost is required when transport.type is mqtt" -}}
{{- end -}}
{{- if and (eq $t.type "kafka") (not $t.kafka.bootstrapServer) -}}
{{- fail "transport.kafka.bootstrapServer is required when transport.type is kafka" -}}
{{- end -}}
{{- if and (eq $t.type "grpc") $t.credentials.existingSecret (not $t.tls.enabled) -}}
{{- fail "transport.credentials (a gRPC bearer token) needs transport.tls.enabled: the token is never sent in plaintext" -}}
{{- end -}}
{{- if and (eq $t.type "kafka") $t.kafka.sasl.mechanism (or (not $t.kafka.sasl.username) (not $t.credentials.existingSecret)) -}}
{{- fail "transport.kafka.sasl.mechanism needs transport.kafka.sasl.username and transport.credentials.existingSecret (the password)" -}}
{{- end -}}
{{- if and (eq $t.type "grpc") $t.credentials.serviceAccountToken (not $t.tls.enabled) -}}
{{- fail "transport.credentials.serviceAccountToken needs transport.tls.enabled: the token is never sent in plaintext" -}}
{{- end -}}
{{- if and (eq $t.type "grpc") $t.credentials.serviceAccountToken $t.credentials.existingSecret -}}
{{- fail "transport.credentials: set either serviceAccountToken or existingSecret (a token from a Secret), not both" -}}
{{- end -}}
{{- if and $t.tls.enabled $t.tls.certKey (not $t.tls.existingSecret) -}}
{{- fail "transport.tls.certKey needs transport.tls.existingSecret" -}}
{{- end -}}
{{- end -}}

{{/* Transport ------------------------------------------------------------------------------- */}}

{{/* The gRPC address: explicit, else Service <maestroService> in <maestroNamespace> (first port),
     as the upstream controller discovers it; 8090 when the Service cannot be looked up. */}}
{{- define "mmi.grpcUrl" -}}
{{- $g := .Values.transport.grpc -}}
{{- if $g.url -}}
{{- $g.url -}}
{{- else -}}
{{- $port := 8090 -}}
{{- $svc := lookup "v1" "Service" $g.maestroNamespace $g.maestroService -}}
{{- if and $svc $svc.spec $svc.spec.ports -}}
{{- $port = (index $svc.spec.ports 0).port -}}
{{- end -}}
{{- printf "%s.%s.svc.cluster.local:%v" $g.maestroService $g.maestroNamespace $port -}}
{{- end -}}
{{- end -}}

{{/* The TLS block of a transport section (a dict), with the mounted file paths. */}}
{{- define "mmi.transportTls" -}}
{{- $tls := .Values.transport.tls -}}
{{- $out := dict "enabled" $tls.enabled -}}
{{- if and $tls.enabled $tls.existingSecret -}}
{{- if $tls.caKey -}}
{{- $_ := set $out "caFile" (printf "/etc/mmi/transport-tls/%s" $tls.caKey) -}}
{{- end -}}
{{- if $tls.certKey -}}
{{- $_ := set $out "clientCertFile" (printf "/etc/mmi/transport-tls/%s" $tls.certKey) -}}
{{- $_ := set $out "clientKeyFile" (printf "/etc/mmi/transport-tls/%s" $tls.keyKey) -}}
{{- end -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/* mmi.transportConfig (list $ overrides): the `transport:` section of a config file, with
     exactly the keys the services' settings loaders read. Empty strings are left out so that
     the loader's defaults apply. */}}
{{- define "mmi.transportConfig" -}}
{{- $root := index . 0 -}}
{{- $overrides := index . 1 | default dict -}}
{{- $t := $root.Values.transport -}}
{{- $tls := include "mmi.transportTls" $root | fromYaml -}}
{{- $section := dict "sourceId" $t.sourceId "tls" $tls -}}
{{- if eq $t.type "grpc" -}}
{{- $g := $t.grpc -}}
{{- $_ := set $section "url" (include "mmi.grpcUrl" $root) -}}
{{- $_ := set $section "dataType" $g.dataType -}}
{{- $_ := set $section "publishTimeout" $g.publishTimeout -}}
{{- $_ := set $section "maxInFlight" (int64 $g.maxInFlight) -}}
{{- $_ := set $section "keepAliveTime" $g.keepAliveTime -}}
{{- $_ := set $section "keepAliveTimeout" $g.keepAliveTimeout -}}
{{- $_ := set $section "serverHealthinessTimeout" $g.serverHealthinessTimeout -}}
{{- $_ := set $section "maxReceiveBytes" (int64 $g.maxReceiveBytes) -}}
{{- if $t.credentials.serviceAccountToken -}}
{{- $_ := set $section "tokenFile" "/var/run/secrets/kubernetes.io/serviceaccount/token" -}}
{{- end -}}
{{- else if eq $t.type "mqtt" -}}
{{- $m := $t.mqtt -}}
{{- $_ := set $section "brokerHost" $m.brokerHost -}}
{{- if $m.username -}}
{{- $_ := set $section "username" $m.username -}}
{{- end -}}
{{- $_ := set $section "keepAlive" $m.keepAlive -}}
{{- $_ := set $section "dialTimeout" $m.dialTimeout -}}
{{- $_ := set $section "publishTimeout" $m.publishTimeout -}}
{{- $_ := set $section "pubQoS" (int $m.pubQoS) -}}
{{- $_ := set $section "subQoS" (int $m.subQoS) -}}
{{- $topics := dict -}}
{{- range $k, $v := $m.topics -}}
{{- if $v -}}
{{- $_ := set $topics $k $v -}}
{{- end -}}
{{- end -}}
{{- if $topics -}}
{{- $_ := set $section "topics" $topics -}}
{{- end -}}
{{- else -}}
{{- $k := $t.kafka -}}
{{- $_ := set $section "bootstrapServer" $k.bootstrapServer -}}
{{- $_ := set $section "sourceEventsTopic" $k.sourceEventsTopic -}}
{{- $_ := set $section "agentEventsTopic" $k.agentEventsTopic -}}
{{- $_ := set $section "keyByCluster" $k.keyByCluster -}}
{{- if $k.sasl.mechanism -}}
{{- $_ := set $section "sasl" (dict "mechanism" $k.sasl.mechanism "username" $k.sasl.username) -}}
{{- end -}}
{{- if $k.advancedConfig -}}
{{- $adv := dict -}}
{{- range $key, $v := $k.advancedConfig -}}
{{- $_ := set $adv $key (toString $v) -}}
{{- end -}}
{{- $_ := set $section "advancedConfig" $adv -}}
{{- end -}}
{{- $_ := set $section "deliveryTimeout" $k.deliveryTimeout -}}
{{- $_ := set $section "flushTimeout" $k.flushTimeout -}}
{{- end -}}
{{- $section = mergeOverwrite $section (deepCopy $overrides) -}}
{{- toYaml (dict "type" $t.type $t.type $section) -}}
{{- end -}}

{{/* Pod pieces shared by both Deployments: mmi.podEnv (list $ "dispatcher") ----------------- */}}

{{- define "mmi.podEnv" -}}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: MMI_STORE_DSN
  valueFrom:
    secretKeyRef:
      name: {{ .Values.store.existingSecret }}
      key: {{ .Values.store.dsnKey }}
{{- with .Values.transport.credentials }}
{{- if .existingSecret }}
{{- if eq $.Values.transport.type "grpc" }}
- name: MMI_TRANSPORT_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret }}
      key: {{ .tokenKey }}
{{- else }}
- name: MMI_TRANSPORT_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret }}
      key: {{ .passwordKey }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "mmi.podVolumes" -}}
- name: config
  configMap:
    name: {{ include "mmi.fullname" . }}-config
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
{{- if .Values.transport.tls.existingSecret }}
- name: transport-tls
  secret:
    secretName: {{ .Values.transport.tls.existingSecret }}
    defaultMode: 0440
{{- end }}
{{- if .Values.store.tlsSecret }}
- name: store-tls
  secret:
    secretName: {{ .Values.store.tlsSecret }}
    defaultMode: 0440
{{- end }}
{{- end -}}

{{/* mmi.volumeMounts "dispatcher.yaml" */}}
{{- define "mmi.volumeMounts" -}}
{{- $root := index . 0 -}}
- name: config
  mountPath: /etc/mmi/config.yaml
  subPath: {{ index . 1 }}
  readOnly: true
- name: tmp
  mountPath: /tmp
{{- if $root.Values.transport.tls.existingSecret }}
- name: transport-tls
  mountPath: /etc/mmi/transport-tls
  readOnly: true
{{- end }}
{{- if $root.Values.store.tlsSecret }}
- name: store-tls
  mountPath: /etc/mmi/store-tls
  readOnly: true
{{- end }}
{{- end -}}

{{/* Preferred anti-affinity between replicas of one component: mmi.affinity (list $ "dispatcher" .affinity) */}}
{{- define "mmi.affinity" -}}
{{- $root := index . 0 -}}
{{- $custom := index . 2 -}}
{{- if $custom -}}
{{- toYaml $custom -}}
{{- else -}}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "mmi.selectorLabels" (list $root (index . 1)) | nindent 12 }}
{{- end -}}
{{- end -}}
