#!/usr/bin/env bash
# testbed-timeout: 600
# Improv on a box without NetworkManager, joining with the package's join program: mac80211_hwsim
# gives the guest two Wi-Fi radios; hostapd runs a WPA2 access point (with dnsmasq for DHCP) on
# one; on the other wpa_supplicant runs as Debian starts it for an interface
# (wpa_supplicant@IFACE.service, its control socket in group netdev) and systemd-networkd gets
# the address. bleadvd, installed from the package, joins with
# /usr/libexec/bleadvd/join-wpa-supplicant, as its own user in its unit's sandbox, and Home
# Assistant's client (on hci1) provisions it:
# - without the drop-in the program cannot reach wpa_supplicant's socket: unable to connect, and
#   the journal says why;
# - with the package's example drop-in (group netdev, a runtime directory for wpa_cli's socket):
#   a stranger's passwords that a line editor would take as wpa_supplicant commands (CR, LF, a
#   quote, a NUL, 200 bytes) are refused before any join, the admin's network untouched; a wrong
#   password fails, the right one provisions with networkd's address in the redirect,
#   wpa_supplicant keeps one network of bleadvd's beside the admin's and saves it; provisioning
#   again keeps one;
# - the password is in no journal line and not in status;
# - the password is one wpa_supplicant's file cannot hold in quotes (a '#' after a quote would end
#   its line at the next start, #78): the join gives wpa_supplicant WPA's key instead, and
#   wpa_supplicant restarted on the config it saved starts, keeps the admin's network and joins
#   again.
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

ssid=bleadvd-test-ap
password='7k"Q#p2!xZ'
ap_address=192.168.77.1
program=/usr/libexec/bleadvd/join-wpa-supplicant

install_package

echo "1. Wi-Fi: hostapd's access point on one radio; wpa_supplicant and systemd-networkd on the other, no NetworkManager"
wifi_access_point "$ssid" "$password" "$ap_address"
# An admin's network, first (network 0): what an injected "remove_network 0" would erase.
install -m 600 /dev/stdin "/etc/wpa_supplicant/wpa_supplicant-$station.conf" <<CONF
ctrl_interface=DIR=/run/wpa_supplicant GROUP=netdev
update_config=1

network={
	ssid="admins-own-network"
	psk="the-admins-passphrase"
}
CONF
printf '[Match]\nName=%s\n\n[Network]\nDHCP=ipv4\n' "$station" > "/etc/systemd/network/50-$station.network"
systemctl start systemd-networkd "wpa_supplicant@$station"
# What the package does not make, gone at the end: scenarios after this one in the same boot
# find bleadvd's unit as the package left it.
cleanup() {
  rm -rf /etc/systemd/system/bleadvd.service.d "/etc/systemd/network/50-$station.network"
  systemctl daemon-reload
  systemctl stop "wpa_supplicant@$station" systemd-networkd 2> /dev/null || true
}
on_exit cleanup
wait_for 20 "wpa_supplicant's control socket" "[ -S /run/wpa_supplicant/$station ]"
# Its journal then has each command it is sent and each state it goes through (shown on failure).
wpa_cli -i "$station" log_level DEBUG > /dev/null
echo "    $ap: hostapd, WPA2 \"$ssid\"; $station: $(wpa_cli -v | head -n1), its socket $(stat -c '%A %U:%G' "/run/wpa_supplicant/$station");" \
  "systemd-networkd $(systemctl is-active systemd-networkd); NetworkManager $(systemctl is-active NetworkManager 2> /dev/null || true)"

echo "2. without the drop-in: the program cannot reach wpa_supplicant"
cat > /etc/bleadvd/bleadvd.toml <<TOML
adapter = "hci0"

[improv]
device_name = "attic-pi"
redirect_url = "http://{address}:8123/"
join = "$program"
# Five minutes: Home Assistant's client may take over a minute to connect in the bed (66).
authorization_seconds = 300
TOML
systemctl restart bleadvd
address=$(adapter_address)
since=$(date '+%Y-%m-%d %H:%M:%S')
out=$(improv_client "$address" authorize "provision:$ssid:$password")
echo "$out" | sed 's/^/    /'
expect_line "provisioning $ssid failed: UNABLE_TO_CONNECT" "$out"
why=$(bleadvd_journal "$since" | grep "improv: could not join" || true)
echo "    journal: $why"
[[ "$why" == *"no wpa_supplicant control socket in /run/wpa_supplicant that user bleadvd may open"* ]] \
  || fail "the journal does not say why the program could not join"

echo "3. with the package's drop-in: a stranger's passwords that would be wpa_supplicant commands"
mkdir -p /etc/systemd/system/bleadvd.service.d
cp /usr/share/doc/bleadvd/examples/join-wpa-supplicant.conf /etc/systemd/system/bleadvd.service.d/
systemctl daemon-reload
systemctl restart bleadvd
echo "    bleadvd's unit: SupplementaryGroups=$(unit_property SupplementaryGroups) RuntimeDirectory=$(unit_property RuntimeDirectory)"
admins() { wpa_cli -i "$station" list_networks | tail -n +2; sha256sum < "/etc/wpa_supplicant/wpa_supplicant-$station.conf"; }
before=$(admins)
since=$(date '+%Y-%m-%d %H:%M:%S')
# x" CR remove_network 0 CR save_config; the same with LF; a quote and terminate; a NUL: through
# Home Assistant's client. 200 bytes, which that client cannot frame (it packs the length as a
# signed byte), as a frame of our own making.
payloads=(
  "$(printf 'x"\rremove_network 0\rsave_config ' | od -v -An -tx1 | tr -d ' \n')"
  "$(printf 'hunter22\nremove_network 0' | od -v -An -tx1 | tr -d ' \n')"
  "$(printf 'hunter22"\r\nterminate' | od -v -An -tx1 | tr -d ' \n')"
  "68756e74657200323232"
)
# The client drops its link after each failed command (as Home Assistant's does), and the
# authorization ends with it (#78): each is authorized again.
steps=()
for payload in "${payloads[@]}"; do steps+=(authorize "provision-hex:$ssid:$payload"); done
long=$(python3 -c 'import sys
ssid, password = sys.argv[1].encode(), b"a" * 200
data = bytes([len(ssid)]) + ssid + bytes([len(password)]) + password
head = bytes([1, len(data)]) + data
print((head + bytes([sum(head) & 0xFF])).hex())' "$ssid")
steps+=(authorize "raw:$long")
out=$(improv_client "$address" "${steps[@]}")
echo "$out" | sed -E 's/raw [0-9a-f]{40,}/raw (a frame with 200 bytes of password)/; s/^/    /'
refused=$(grep -c "provisioning $ssid failed: UNABLE_TO_CONNECT" <<< "$out" || true)
[[ "$refused" == "${#payloads[@]}" ]] || fail "$refused of ${#payloads[@]} such passwords were refused"
grep -q "raw $long: error UNABLE_TO_CONNECT" <<< "$out" || fail "the 200-byte password was not refused with unable to connect"
journal=$(bleadvd_journal "$since")
grep -c "refused before any join" <<< "$journal" | sed 's/^/    journal: refused before any join, times: /'
! grep -q "improv: .* sent Wi-Fi settings" <<< "$journal" || fail "a join ran for such a password: $(grep 'sent Wi-Fi settings' <<< "$journal")"
[[ "$(admins)" == "$before" ]] || fail "wpa_supplicant's networks or saved config changed: before $before; after $(admins)"
echo "    wpa_supplicant's networks and saved config unchanged: $(wpa_cli -i "$station" list_networks | tail -n +2 | cut -f1,2 | tr '\t\n' ' /')"

echo "4. a wrong password, then the right one"
since=$(date '+%Y-%m-%d %H:%M:%S')
out=$(improv_client "$address" authorize "provision:$ssid:wrong-password-1" state authorize "provision:$ssid:$password")
echo "$out" | sed 's/^/    /'
expect_line "provisioning $ssid failed: UNABLE_TO_CONNECT" "$out"
bleadvd_journal "$since" | grep "improv:" | sed 's/^/    journal: /'
redirect=$(sed -nE "s|.*provisioned $ssid: redirect (http://[^ ]*).*|\1|p" <<< "$out")
if [[ -z "$redirect" ]]; then
  echo "    wpa_supplicant's networks: $(wpa_cli -i "$station" list_networks | tail -n +2 | tr '\t\n' ' /')"
  journalctl -u "wpa_supplicant@$station" --no-pager -o cat | grep -E "CTRL_IFACE|State:|[Ss]can|SSID|reject|disabled|CTRL-EVENT" \
    | tail -n 80 | sed 's/^/    wpa_supplicant: /'
  fail "not provisioned"
fi
got=$(ip -4 -o addr show "$station" | awk '{ print $4 }')
echo "    $station: $(wpa_cli -i "$station" status | grep -E '^(wpa_state|ssid|id_str)=' | tr '\n' ' ')$got (systemd-networkd)"
[[ "$redirect" == "http://${got%/*}:8123/" ]] || fail "the redirect $redirect does not carry the station's address $got"
# bleadvd's networks: all but the admin's, which stays.
networks() { wpa_cli -i "$station" list_networks | awk -F '\t' 'NR > 1 && $2 != "admins-own-network"' | grep -c . || true; }
[[ "$(networks)" == 1 ]] || fail "wpa_supplicant keeps $(networks) networks of bleadvd's, not 1: $(wpa_cli -i "$station" list_networks)"
grep -q 'id_str="bleadvd-improv"' "/etc/wpa_supplicant/wpa_supplicant-$station.conf" || fail "wpa_supplicant did not save bleadvd's network"
grep -q 'ssid="admins-own-network"' "/etc/wpa_supplicant/wpa_supplicant-$station.conf" || fail "the admin's network is gone from wpa_supplicant's config"
echo "    wpa_supplicant keeps 1 network of bleadvd's, saved in its config with bleadvd's mark, and the admin's"

echo "5. provisioning again keeps one network"
# A program cannot tell whether the Wi-Fi is connected: Improv, withdrawn 30 s after it
# provisioned, is offered again when bleadvd starts.
systemctl restart bleadvd
out=$(improv_client "$address" authorize "provision:$ssid:$password")
echo "$out" | sed 's/^/    /'
grep -q "provisioned $ssid: redirect" <<< "$out" || fail "not provisioned the second time"
[[ "$(networks)" == 1 ]] || fail "provisioning again left $(networks) networks: $(wpa_cli -i "$station" list_networks)"
echo "    wpa_supplicant keeps $(networks) network"

echo "6. the password"
seen=$( (journalctl --no-pager -o cat 2> /dev/null; bleadvctl status --json) | grep -c "$password" || true)
echo "    in the journal (every unit's) and status: $seen time(s)"
[[ "$seen" == 0 ]] || fail "the password was shown"

echo "7. the config wpa_supplicant saved, read again as at the next boot"
conf="/etc/wpa_supplicant/wpa_supplicant-$station.conf"
keys=$(grep -cE '^[[:space:]]*psk=[0-9a-f]{64}$' "$conf" || true)
echo "    $conf: $keys network(s) with a key of 64 hex digits, $(grep -c 'psk="' "$conf" || true) with a passphrase in quotes (the admin's)"
[[ "$keys" == 1 ]] || fail "bleadvd's network is not saved with WPA's key: $(grep -E 'psk=' "$conf" | sed 's/psk=.*/psk=.../' | tr '\n' ' ')"
restarted_at=$(date +%s.%N)
systemctl restart "wpa_supplicant@$station"
joined_again() { wpa_cli -i "$station" status 2> /dev/null | grep -qx 'wpa_state=COMPLETED' && wpa_cli -i "$station" status | grep -qx 'id_str=bleadvd-improv'; }
if ! wait_for 60 "wpa_supplicant, restarted on its saved config, to join bleadvd's network again" joined_again; then
  journalctl -u "wpa_supplicant@$station" --no-pager -o cat -n 20 | sed 's/^/    wpa_supplicant: /'
  fail "wpa_supplicant did not join again from the config it saved"
fi
echo "    wpa_supplicant restarted: $(systemctl is-active "wpa_supplicant@$station"), joined $ssid again in $(elapsed "$restarted_at") s:" \
  "$(wpa_cli -i "$station" status | grep -E '^(wpa_state|id_str)=' | tr '\n' ' ')"
wpa_cli -i "$station" list_networks | grep -q 'admins-own-network' || fail "the admin's network is gone after the restart"
echo "    the admin's network is kept"
