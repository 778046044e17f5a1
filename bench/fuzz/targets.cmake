# The fuzz targets of bench/fuzz/ and what each compiles in: the sources of the parsers it drives
# (built with the sanitizers, rather than linking the libraries and their gRPC dependencies) and
# the libraries those need. Included by bench/CMakeLists.txt (libFuzzer, clang) and
# test/CMakeLists.txt (short smoke runs in the suite, gcc).
set(ETCDADM_FUZZ_TARGETS bolt_reader bolt_writer age_decrypt store_metadata aws_responses gcs_responses)
set(_fuzz_src ${PROJECT_SOURCE_DIR})
set(FUZZ_bolt_reader_SOURCES ${_fuzz_src}/etcd/datadir/bolt_reader.cc ${_fuzz_src}/common/fs.cc ${_fuzz_src}/common/error.cc)
set(FUZZ_bolt_reader_LIBS)
set(FUZZ_bolt_writer_SOURCES ${_fuzz_src}/etcd/datadir/bolt_writer.cc ${_fuzz_src}/etcd/datadir/bolt_reader.cc
                             ${_fuzz_src}/common/fs.cc ${_fuzz_src}/common/error.cc)
set(FUZZ_bolt_writer_LIBS)
set(FUZZ_age_decrypt_SOURCES ${_fuzz_src}/store/age.cc ${_fuzz_src}/common/base64.cc ${_fuzz_src}/common/error.cc
                            ${_fuzz_src}/common/sha256.cc)
set(FUZZ_age_decrypt_LIBS OpenSSL::Crypto)
set(FUZZ_store_metadata_SOURCES ${_fuzz_src}/store/layout.cc ${_fuzz_src}/store/etcd_manager.cc ${_fuzz_src}/store/codec.cc ${_fuzz_src}/store/blob_store.cc ${_fuzz_src}/store/blob_capabilities.cc
                                ${_fuzz_src}/store/encryption.cc ${_fuzz_src}/store/age.cc ${_fuzz_src}/common/base64.cc
                                ${_fuzz_src}/common/fs.cc ${_fuzz_src}/common/timefmt.cc ${_fuzz_src}/common/error.cc
                                ${_fuzz_src}/common/sha256.cc)
set(FUZZ_store_metadata_LIBS nlohmann_json::nlohmann_json spdlog::spdlog PkgConfig::ZSTD PkgConfig::ISAL OpenSSL::Crypto)
set(FUZZ_aws_responses_SOURCES ${_fuzz_src}/store/backend/s3/aws_responses.cc ${_fuzz_src}/store/backend/object/xml_reader.cc
                               ${_fuzz_src}/common/timefmt.cc ${_fuzz_src}/common/error.cc)
set(FUZZ_aws_responses_LIBS nlohmann_json::nlohmann_json LibXml2::LibXml2)
set(FUZZ_gcs_responses_SOURCES ${_fuzz_src}/store/backend/gcs/gcs_responses.cc ${_fuzz_src}/store/backend/object/oauth_token_answer.cc
                               ${_fuzz_src}/common/timefmt.cc ${_fuzz_src}/common/error.cc)
set(FUZZ_gcs_responses_LIBS nlohmann_json::nlohmann_json)
