# cmake -DETCDADM=<binary> -DSOURCE=<source dir> -DOUT=<dir> -P generate_docs.cmake
# The package's generated files: etcdadm.1.gz and the bash completion from the built binary's own
# command tree, and the gzipped changelog (gzip -n: no timestamp, reproducible).
file(MAKE_DIRECTORY ${OUT})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${ARGN}: exit ${rc}")
  endif()
endfunction()
run(${ETCDADM} man OUTPUT_FILE ${OUT}/etcdadm.1)
run(gzip -9nf ${OUT}/etcdadm.1)
run(${ETCDADM} completion bash OUTPUT_FILE ${OUT}/etcdadm.bash)
run(gzip -9nc ${SOURCE}/packaging/changelog OUTPUT_FILE ${OUT}/changelog.gz)
