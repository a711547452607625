# Data installed under $(pkgdatadir) and the default configuration under $(sysconfdir).
dist_pkgdata_DATA += %reldir%/models.json %reldir%/morphling-artifact.json

# morph.conf is the site's once installed: make install always puts the example beside
# it as morph.conf.example, and morph.conf itself only where there is none; make
# uninstall removes morph.conf only while it is still the example.
EXTRA_DIST += etc/morph.conf
install-data-local:
	$(MKDIR_P) '$(DESTDIR)$(sysconfdir)'
	$(INSTALL_DATA) '$(srcdir)/etc/morph.conf' '$(DESTDIR)$(sysconfdir)/morph.conf.example'
	test -e '$(DESTDIR)$(sysconfdir)/morph.conf' || \
	  $(INSTALL_DATA) '$(srcdir)/etc/morph.conf' '$(DESTDIR)$(sysconfdir)/morph.conf'
uninstall-local:
	if cmp -s '$(DESTDIR)$(sysconfdir)/morph.conf' '$(DESTDIR)$(sysconfdir)/morph.conf.example'; then \
	  rm -f '$(DESTDIR)$(sysconfdir)/morph.conf'; fi
	rm -f '$(DESTDIR)$(sysconfdir)/morph.conf.example'

# Parameter naming rule tables for resharding (libmorph/state/state_spec.h).
rulesdir = $(pkgdatadir)/rules
dist_rules_DATA = %reldir%/rules/megatron.json %reldir%/rules/llama-hf.json

# Framework rendering rules for morphrun --framework (libmorph/launch/framework.h,
# docs/frameworks.md); a site adds a framework by adding a file.
frameworksdir = $(pkgdatadir)/frameworks
dist_frameworks_DATA = %reldir%/frameworks/megatron.json %reldir%/frameworks/deepspeed.json \
	%reldir%/frameworks/torch.json
