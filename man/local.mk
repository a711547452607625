dist_man_MANS += %reldir%/morph.1 %reldir%/morphrun.1 %reldir%/morphd.8 %reldir%/morph-profile.1 %reldir%/morph.conf.5 %reldir%/spank_morph.8 %reldir%/job_submit_morph.8
