"""The Pulumi program: stack config -> the core's plan -> ``Environment`` -> exports.

``__main__.py`` calls ``main()``. ``fullserver plan`` runs ``deploy()`` (and tests run ``main()``)
under Pulumi's mock runtime, so the graph it prints is the one ``pulumi up`` creates.

Design notes: docs/design/components.md.
"""

from __future__ import annotations

from typing import Any, cast

import pulumi
from pulumi.runtime import config as pulumi_config

from components import registry
from components.environment import Environment, environment_args
from components.node_verify import NodeVerify, verify_warnings
from components.serving import call_command
from fullserver.catalog import load_catalog
from fullserver.errors import FullserverError, InputError
from fullserver.placement import check_pinned
from fullserver.plan import StackPlan, check_budget, plan_workload
from fullserver.platform import Platform
from fullserver.platforms import rules_for
from fullserver.profiles import get_profile, load_profiles
from fullserver.rules import stack_file
from fullserver.stacks import SECRET_KEYS, workload_from_config
from fullserver.workload import CONFIG_NAMESPACE

# What stands for a secret's value: the model only learns that it is set (as from a stack file's
# ``secure:`` ciphertext); the decrypted value stays with Pulumi's config, read where it is used.
HIDDEN = {"secure": "(held by Pulumi)"}


def stack_config() -> dict[str, str]:
    """Every config key of this stack as Pulumi hands it to the program.

    ``pulumi.Config`` can only look keys up by name, so the whole map is read where the SDK keeps
    it: ``pulumi.runtime.config.CONFIG`` (the language host loads the engine's ``PULUMI_CONFIG``
    into it before the program starts; ``set_all_config`` under mocks), over ``PULUMI_CONFIG``
    itself, the same order ``pulumi.runtime.get_config`` looks a key up in. The map holds the
    project's declared defaults too (Pulumi merges them into the stack's config).
    """
    return {**pulumi_config.get_config_env(), **pulumi_config.CONFIG.get()}


def read_config() -> dict[str, Any]:
    """This stack's ``fullserver:*`` keys for the core: text as Pulumi gives it, with secrets
    (and any value Pulumi marks secret) replaced by ``HIDDEN``, so the core refuses an
    encrypted key it would have to read just as it refuses the stack file's ``secure:`` value."""
    out: dict[str, Any] = {}
    for key, value in stack_config().items():
        if not key.startswith(f"{CONFIG_NAMESPACE}:"):
            continue
        name = key.split(":", 1)[1]
        if name in SECRET_KEYS:
            out[key] = HIDDEN if value not in ("", None) else ""
        elif pulumi_config.is_config_secret(key):
            out[key] = HIDDEN
        else:
            out[key] = value
    return out


def plan_from_config(stack: str) -> StackPlan:
    where = f"stacks/{stack_file(stack)}"
    try:
        workload = workload_from_config(read_config(), where)
        profiles, catalog = load_profiles(), load_catalog()
        plan = plan_workload(stack, where, workload, profiles, catalog)
        check_pinned(plan.placement, stack)  # a location is the plan's question; up builds only a pin
        check_budget([plan], None)
        if rules_for(plan.spec.platform).supply.reached_over_ssh and not workload.ssh_private_key:
            # The plan works offline without it; deploying reaches the servers over SSH.
            raise InputError(
                f"{CONFIG_NAMESPACE}:sshPrivateKey",
                "is not set, and bare metal is configured over SSH",
                f"pulumi config set --secret {CONFIG_NAMESPACE}:sshPrivateKey < ~/.ssh/id_ed25519",
            )
    except FullserverError as exc:
        raise pulumi.RunError(f"{where}: {exc.line()}" if not exc.line().startswith(where) else exc.line()) from None
    return plan


def cloud_provider(plan: StackPlan, project: str | None) -> pulumi.ProviderResource | None:
    """The environment's explicit provider (its platform's, ``components.registry``): its region
    (and project, and zone) set from the stack's fullserver config, not from whatever
    ``aws:region`` / ``gcp:region`` or the deployer's environment says. Passed to the
    ``Environment`` component, it reaches every child resource and invoke through ``parent``. An
    explicit provider reads no ``aws:*`` / ``gcp:*`` config of its own, so the settings that say
    *who* deploys are forwarded (``aws:profile``; ``gcp:credentials``,
    ``gcp:impersonateServiceAccount``); credentials otherwise come from the environment
    (``AWS_PROFILE``, application default credentials)."""
    return registry.entry(plan.spec.platform).provider(plan, project)


def cloud_private_key(plan: StackPlan) -> str | None:
    """The text of ``fullserver:sshPrivateKey`` on a cloud stack (None: not set, or bare metal,
    whose provider takes the key itself). Read from the config Pulumi decrypted for the program,
    only to derive the public half; it is never logged or exported."""
    if rules_for(plan.spec.platform).supply.reached_over_ssh:
        return None
    text = stack_config().get(f"{CONFIG_NAMESPACE}:sshPrivateKey")
    return str(text) if text else None


def install_public_half(args: Any, private_key: str) -> None:
    """Install the public half of the stack's private key for the nodes' login user, beside
    ``fullserver:sshPublicKeys``: the verify ``pulumi up`` runs (and ``fullserver verify STACK
    --identity``) logs in with it, and the ``nodes`` rows say ``keys: true``."""
    from fullserver.baremetal.ssh import public_key_line  # paramiko: loaded only when a key is set

    access = args[registry.entry(Platform(args["platform"])).args_key]["access"]
    line = public_key_line(private_key)
    keys = list(access.get("ssh_public_keys", []))
    if line.rsplit(" ", 1)[0] not in {" ".join(k.split()[:2]) for k in keys}:
        access["ssh_public_keys"] = [*keys, line]


def profile_verifies_on_up(plan: StackPlan) -> bool:
    """Whether the plan's profile asks for verify as the last step of ``pulumi up``."""
    return get_profile(plan.spec.profile, load_profiles()).verify.on_up


def with_autostop(args: Any, plan: StackPlan) -> None:
    """Hand the plan's autostop to the platform's args, where the nodes run the idle agent."""
    auto = plan.autostop
    if auto is not None and auto.on:
        args[registry.entry(plan.spec.platform).args_key]["autostop"] = {"minutes": auto.minutes, "way": auto.way}


def export_autostop(plan: StackPlan, env: Environment) -> None:
    """When the nodes stop themselves, how to keep them up and start them again (docs/autostop.md):
    what ``fullserver start`` reads (``fullserver.autostop.start``)."""
    a = plan.autostop
    if a is None or not a.on:
        return
    pulumi.export(
        "autostop",
        {
            "minutes": a.minutes,
            "how": a.how,
            "keep": "sudo touch /var/lib/fullserver/keep",
            "start": a.start,
            "restoredByUp": a.restored_by_up,
            "startCommands": env.start_commands,
            # as the provider read them at the last program run (docs/autostop.md, "Is it stopped now?")
            "runningNodes": env.running_nodes,
            "stoppedNow": env.running_nodes.apply(lambda n: n == 0),
        },
    )


def deploy(plan: StackPlan) -> Environment:
    """Build the environment for a plan and export what people need to use and judge it."""
    spec = plan.spec
    entry = registry.entry(spec.platform)
    project = entry.project()
    private_key = cloud_private_key(plan)
    try:
        provider = cloud_provider(plan, project)
        opts = pulumi.ResourceOptions(providers=[provider]) if provider is not None else None
        args = environment_args(spec, project=project)
        with_autostop(args, plan)
        if private_key is not None:
            install_public_half(args, private_key)
        env = Environment(plan.stack, args, opts)
    except FullserverError as exc:
        raise pulumi.RunError(exc.line()) from None
    if private_key is not None and profile_verifies_on_up(plan):
        verify = NodeVerify(
            f"{plan.stack}-verify",
            nodes=env.nodes,
            private_key=pulumi.Config(CONFIG_NAMESPACE).require_secret("sshPrivateKey"),
            profile=spec.profile,
            platform=spec.platform.value,
            opts=pulumi.ResourceOptions(depends_on=[env]),
        )

        def warn(status: dict[str, Any] | None) -> None:
            for line in verify_warnings(status):
                pulumi.log.warn(line, verify)

        verify.node_status.apply(warn)
    pulumi.export("platform", spec.platform.value)
    pulumi.export(
        "shape", f"{spec.offer}: {spec.accelerator_count} x {spec.accelerator} per node, {spec.nodes} node(s)"
    )
    pulumi.export("privateIps", env.private_ips)
    pulumi.export("publicIps", env.public_ips)
    pulumi.export("connect", env.connect)
    # Each node and the way in, for `fullserver verify` and ~/.ssh/config (docs/deploying.md, "Reaching the nodes").
    pulumi.export("nodes", env.nodes)
    pulumi.export("nodeGroups", env.node_groups)
    if spec.endpoint is not None:
        # The OpenAI-compatible API of the serving group (docs/deploying.md, "Serving").
        pulumi.export("endpoint", env.endpoint)
        pulumi.export("model", spec.endpoint.server.model)
        key = spec.endpoint.server.api_key_secret
        key_command = entry.secret_command(spec, key, project) if key and entry.secret_command else None
        pulumi.export("call", env.endpoint.apply(lambda url: call_command(url, key_command)))
        if spec.endpoint.tls is not None and spec.endpoint.tls.host:
            # where the stack's domains must point (a CNAME to the ALB, an A record to GCP's address)
            target: pulumi.Output[str] = cast(Any, env.inner).lb_address
            pulumi.export("dnsTarget", target.apply(lambda a: a or "<load balancer address, known after pulumi up>"))
    # Who the nodes are, to grant them access to data (docs/deploying.md, "Credentials").
    for export, output in entry.identity_exports.items():
        pulumi.export(export, getattr(env, output))
    for export, value in entry.exports(spec, env.inner).items():
        pulumi.export(export, value)
    pulumi.export("balance", spec.balance.model_dump(mode="json"))
    pulumi.export(
        "cost",
        {
            "usdPerHour": plan.cost.usd_hour,
            "usdPerMonth": plan.cost.usd_month,
            "items": plan.cost.model_dump(mode="json"),
        },
    )
    export_autostop(plan, env)
    pulumi.export("warnings", plan.warnings)
    return env


def main() -> Environment:
    return deploy(plan_from_config(pulumi.get_stack()))
