#!/bin/sh
# A stand-in for your end-to-end tests, in the place `fullserver ephemeral` runs them:
#
#   .venv/bin/fullserver ephemeral --stack exp-aws-spot --ttl 2h -- examples/smoke.sh
#
# It runs after `pulumi up`, before the throwaway stack is destroyed, and checks what every such
# command is given: the stack's name and expiry, each stack output as FULLSERVER_OUTPUT_<NAME>
# (privateIps -> FULLSERVER_OUTPUT_PRIVATE_IPS; strings as is, other values as JSON) and every
# output in the JSON file FULLSERVER_OUTPUTS_FILE. Replace it with your own tests, which reach the
# environment through the `connect` output (an SSH, IAP or Session Manager command).
set -eu

: "${FULLSERVER_STACK:?not set: run this through fullserver ephemeral}"
: "${FULLSERVER_EXPIRES_AT:?not set: run this through fullserver ephemeral}"
: "${FULLSERVER_OUTPUTS_FILE:?not set: run this through fullserver ephemeral}"
: "${FULLSERVER_OUTPUT_PLATFORM:?the stack exported no platform output}"
: "${FULLSERVER_OUTPUT_CONNECT:?the stack exported no connect output}"
[ -s "$FULLSERVER_OUTPUTS_FILE" ] || { echo "smoke: $FULLSERVER_OUTPUTS_FILE is empty" >&2; exit 1; }

echo "smoke: stack $FULLSERVER_STACK ($FULLSERVER_OUTPUT_PLATFORM), expires $FULLSERVER_EXPIRES_AT"
echo "smoke: reach it with: $FULLSERVER_OUTPUT_CONNECT"
