# Included by server/http/CMakeLists.txt: generates web_assets.c (the dashboard's files as C
# arrays, see embed_web.cmake) and adds it to the http library (served by routes_web.c).
file(GLOB WEB_ASSET_FILES CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/server/web/*.html ${PROJECT_SOURCE_DIR}/server/web/*.css
     ${PROJECT_SOURCE_DIR}/server/web/*.js ${PROJECT_SOURCE_DIR}/server/web/*.svg)
set(WEB_ASSETS_C ${CMAKE_CURRENT_BINARY_DIR}/web_assets.c)
add_custom_command(
  OUTPUT ${WEB_ASSETS_C}
  COMMAND ${CMAKE_COMMAND} -DSRC=${PROJECT_SOURCE_DIR}/server/web -DOUT=${WEB_ASSETS_C}
          -P ${PROJECT_SOURCE_DIR}/server/web/embed_web.cmake
  DEPENDS ${WEB_ASSET_FILES} ${PROJECT_SOURCE_DIR}/server/web/embed_web.cmake
          ${PROJECT_SOURCE_DIR}/cmake/embed_files.cmake
  COMMENT "Embedding the dashboard (server/web)")
target_sources(http PRIVATE ${WEB_ASSETS_C})
