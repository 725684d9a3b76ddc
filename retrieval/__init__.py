"""What facts and recall both rank with: keyword search (BM25 over a bounded candidate set),
the fusion of the keyword and semantic legs, and the rerankers."""
