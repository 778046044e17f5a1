// The headers nearly every test translation unit parses, compiled once per build into a
// precompiled header (test/CMakeLists.txt) instead of once per test file: gtest, nlohmann's JSON,
// the standard library and the CLI fixture, which brings gRPC and etcd's generated protobuf code
// (about 240,000 lines after the preprocessor). It only speeds compiling: every test file still
// includes what it uses, so each also builds without it.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/fs.h"
#include "common/subprocess.h"
#include "test/support/cli_fixture.h"
