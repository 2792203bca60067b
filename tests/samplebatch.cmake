# Privacy-API sample batches (issue #13): the batch parser and its canonical form.
stacksift_unit_test(test_samplebatch SOURCES test_samplebatch.c LIBS samplebatch base)
