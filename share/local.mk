# Data installed under $(pkgdatadir) and the default configuration under $(sysconfdir).
dist_pkgdata_DATA += %reldir%/models.json %reldir%/morphling-artifact.json
dist_sysconf_DATA += etc/morph.conf
