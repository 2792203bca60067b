# Included by server/http/CMakeLists.txt: generates web_assets.c (the dashboard's files as C
# arrays, see embed_web.cmake) and adds it, static.c and routes_web.c to the http library.
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
target_sources(http PRIVATE ${PROJECT_SOURCE_DIR}/server/http/static.c
               ${PROJECT_SOURCE_DIR}/server/http/routes_web.c ${WEB_ASSETS_C})
# The sparkline query's SQL lives with the rest of the SQL, in server/store (store_web.c).
target_sources(store PRIVATE ${PROJECT_SOURCE_DIR}/server/store/store_web.c)
