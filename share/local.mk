# Data installed under $(pkgdatadir) and the default configuration under $(sysconfdir).
dist_pkgdata_DATA += %reldir%/models.json %reldir%/morphling-artifact.json
dist_sysconf_DATA += etc/morph.conf

# Parameter naming rule tables for resharding (libmorph/state/state_spec.h).
rulesdir = $(pkgdatadir)/rules
dist_rules_DATA = %reldir%/rules/megatron.json %reldir%/rules/llama-hf.json

# Framework rendering rules for morphrun --framework (libmorph/launch/framework.h,
# docs/frameworks.md); a site adds a framework by adding a file.
frameworksdir = $(pkgdatadir)/frameworks
dist_frameworks_DATA = %reldir%/frameworks/megatron.json %reldir%/frameworks/deepspeed.json \
	%reldir%/frameworks/torch.json
