def test_probe(pytester):
    pytester.makepyfile("def test_a(): pass")
    pytester.runpytest().assert_outcomes(passed=1)
