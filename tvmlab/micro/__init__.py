"""TVM's ``tvm.micro`` namespace: only its AOT test runners (``tvmlab.micro.testing``) exist here."""
