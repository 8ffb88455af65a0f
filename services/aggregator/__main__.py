from services.aggregator.main import main

main()
