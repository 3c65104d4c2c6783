"""Test helpers under TVM's ``tvm.micro.testing`` names (``aot_test_utils``)."""
