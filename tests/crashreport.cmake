# Crash and stack reports (issue #3): parsers, renderers, report symbolication, CLI.
# The stacksift executable links the modules server/CMakeLists.txt lists; symbolicate is not
# among them yet, so it is linked here (tests/ is configured after server/).
if(TARGET stacksift AND TARGET symbolicate)
  target_link_libraries(stacksift PRIVATE symbolicate)
endif()

stacksift_unit_test(test_crashreport SOURCES test_crashreport.c LIBS crashreport PkgConfig::JANSSON)
set_tests_properties(test_crashreport PROPERTIES TIMEOUT 300)
