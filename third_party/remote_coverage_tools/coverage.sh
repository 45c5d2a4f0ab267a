#!/bin/sh
echo "coverage is not supported in this offline build; run gcov/lcov outside Bazel" >&2
exit 1
