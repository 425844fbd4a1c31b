#!/usr/bin/env bash
# Validates Kubernetes manifests (default: scripts/k8s-mpijob.yaml) against
# the real MPIJob schema with a real validator, offline but for the Go
# module proxy:
#   - the schema is the Kubeflow MPI Operator's own CRD
#     (manifests/base/kubeflow.org_mpijobs.yaml of github.com/kubeflow/mpi-operator),
#   - converted to JSON Schema by kubeconform's scripts/openapi2jsonschema.py,
#   - and checked by kubeconform in strict mode (unknown fields are errors).
#
#   scripts/k8s-validate.sh [manifest.yaml …]
#
# Needs go and python3 with PyYAML (Debian: python3-yaml). Exit 0 when every
# document is valid, 1 when one is not, 2 when the tools cannot be had.
set -euo pipefail
cd "$(dirname "$0")/.."
MPI_OPERATOR=${MPI_OPERATOR:-v0.6.0}
KUBECONFORM=${KUBECONFORM:-v0.6.7}
[ $# -gt 0 ] || set -- scripts/k8s-mpijob.yaml
command -v go >/dev/null || { echo "k8s-validate: needs go" >&2; exit 2; }
python3 -c 'import yaml' 2>/dev/null || { echo "k8s-validate: needs python3 with PyYAML (apt-get install python3-yaml)" >&2; exit 2; }

dir_of() { # module@version → its folder in the module cache
  go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}
operator=$(dir_of "github.com/kubeflow/mpi-operator@$MPI_OPERATOR") || true
kubeconform=$(dir_of "github.com/yannh/kubeconform@$KUBECONFORM") || true
crd=$operator/manifests/base/kubeflow.org_mpijobs.yaml
if [ -z "$operator" ] || [ ! -f "$crd" ] || [ -z "$kubeconform" ]; then
  echo "k8s-validate: cannot fetch mpi-operator $MPI_OPERATOR or kubeconform $KUBECONFORM from the Go module proxy" >&2
  exit 2
fi

schemas=$(mktemp -d)
trap 'rm -rf "$schemas"' EXIT
(cd "$schemas" && FILENAME_FORMAT='{kind}_{version}' python3 "$kubeconform/scripts/openapi2jsonschema.py" "$crd" >/dev/null)
echo "k8s-validate: schemas from mpi-operator $MPI_OPERATOR: $(cd "$schemas" && echo *.json)"
go run "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM" -strict -summary \
  -schema-location "$schemas/{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json" "$@"
