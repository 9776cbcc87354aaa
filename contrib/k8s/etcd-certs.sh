#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The certificates of contrib/k8s/etcd.yaml and of roce-hook's etcd client
# (README, "etcd"): a CA, the members' server and peer certificates, and a
# client certificate for etcd's own tools and one for roce-hook.
#   etcd-certs.sh DIR [CLUSTER_IP...]
# CLUSTER_IP: the Service roce-etcd's address, which the hook (in the host's
# network namespace) connects to:
#   kubectl -n roce-system get svc roce-etcd -o jsonpath='{.spec.clusterIP}'
# Then:
#   kubectl -n roce-system create secret generic roce-etcd-tls --from-file=DIR/etcd
#   kubectl -n roce-system create secret generic roce-hook-etcd-tls --from-file=DIR/roce-hook
# Renewal: run it again with the same DIR (the CA is kept), re-create both
# Secrets; the DaemonSet installs the new client certificate on every node
# within a minute or two, the members read theirs at their next restart.
set -eu
[ $# -ge 1 ] || { echo "usage: etcd-certs.sh DIR [CLUSTER_IP...]" >&2; exit 2; }
dir=$1
shift
days=${ROCE_CERT_DAYS:-825}
ns=${ROCE_NAMESPACE:-roce-system}
mkdir -p "$dir/ca" "$dir/etcd" "$dir/roce-hook"
umask 077
if [ ! -f "$dir/ca/ca-key.pem" ]; then
  openssl req -x509 -newkey rsa:3072 -nodes -keyout "$dir/ca/ca-key.pem" -out "$dir/ca/ca.pem" \
    -days 3650 -subj "/CN=roce-etcd-ca" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
fi
svc="DNS:roce-etcd,DNS:roce-etcd.$ns,DNS:roce-etcd.$ns.svc,DNS:roce-etcd.$ns.svc.cluster.local"
peer="DNS:*.roce-etcd-peer.$ns.svc.cluster.local,DNS:*.roce-etcd-peer.$ns.svc,DNS:*.roce-etcd-peer.$ns"
ips="IP:127.0.0.1"
for ip in "$@"; do ips="$ips,IP:$ip"; done

# cert NAME CN USAGE SAN
cert () {
  openssl req -newkey rsa:2048 -nodes -keyout "$dir/$1-key.pem" -out "$dir/$1.csr" -subj "/CN=$2" 2>/dev/null
  printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=%s\n%s' \
    "$3" "${4:+subjectAltName=$4
}" > "$dir/$1.ext"
  openssl x509 -req -in "$dir/$1.csr" -CA "$dir/ca/ca.pem" -CAkey "$dir/ca/ca-key.pem" -CAcreateserial \
    -out "$dir/$1.pem" -days "$days" -extfile "$dir/$1.ext" 2>/dev/null
  rm -f "$dir/$1.csr" "$dir/$1.ext"
}
cert server roce-etcd serverAuth,clientAuth "$svc,$peer,$ips"
cert peer roce-etcd-peer serverAuth,clientAuth "$peer,$ips"
cert client roce-etcd-client clientAuth ""
cert hook roce-hook clientAuth ""
cp "$dir/ca/ca.pem" "$dir/etcd/ca.pem"
mv "$dir/server.pem" "$dir/server-key.pem" "$dir/peer.pem" "$dir/peer-key.pem" \
  "$dir/client.pem" "$dir/client-key.pem" "$dir/etcd/"
cp "$dir/ca/ca.pem" "$dir/roce-hook/ca.pem"
mv "$dir/hook.pem" "$dir/roce-hook/cert.pem"
mv "$dir/hook-key.pem" "$dir/roce-hook/key.pem"
echo "etcd-certs: $dir/etcd (Secret roce-etcd-tls) and $dir/roce-hook (Secret roce-hook-etcd-tls)"
