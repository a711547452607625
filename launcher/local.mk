# The MPI side of Morph: morph-reshard-mpi now, morphrun with the launcher issue.
if HAVE_MPI
bin_PROGRAMS += launcher/morph-reshard-mpi
launcher_morph_reshard_mpi_SOURCES = %reldir%/reshard_mpi.cc
launcher_morph_reshard_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS) -DOMPI_SKIP_MPICXX=1
launcher_morph_reshard_mpi_LDADD = libmorph/libmorph.la $(MPI_LIBS) $(FMT_LIBS)
endif
