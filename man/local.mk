dist_man_MANS += %reldir%/morph.1 %reldir%/morph.conf.5
