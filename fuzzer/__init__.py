"""The fuzzing suite's parts (``python -m fuzzer``): HTTP cases generated from the
gateway's OpenAPI document (``http_cases``), Kafka records mutated from valid ones
(``bases``, ``mutants``), producing them and matching their dead letters
(``kafka_side``), the sandbox's processes watched (``watch``), valid workflows
interleaved (``valid``), some paused and resumed while they run (``paused``), and one
run of it all (``run``)."""
