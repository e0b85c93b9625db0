#!/bin/sh
# Runs a test program, with $RSM_TEST_LAUNCHER (for example valgrind and its options) in front when set.
exec ${RSM_TEST_LAUNCHER:-} "$@"
