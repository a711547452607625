# Example programs, installed with the documentation: a PyTorch trainer that Morph
# launches, checkpoints and replans (docs/python.md).
torchexampledir = $(docdir)/examples/torch
dist_torchexample_DATA = %reldir%/torch/README.md %reldir%/torch/train.py %reldir%/torch/launch_local.py
